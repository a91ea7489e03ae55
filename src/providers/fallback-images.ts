/**
 * A request for a model that takes no images: each image part of a user
 * message becomes a short note, so a text-only fallback answers what it can
 * instead of refusing the whole request (a 400 that no model change cures).
 */
import type { ChatMessage, ContentPart } from './types.js';

/**
 * `messages` with every image part replaced by a note naming `model`; a message
 * left with text only becomes plain text. Messages without images are kept as they are.
 *
 * @example withoutImages([{ role: 'user', content: [{ type: 'text', text: 'what is this?' }, { type: 'image', url }] }], 'llama3.1')
 * // [{ role: 'user', content: 'what is this?\n[image not shown: llama3.1 does not take images]' }]
 */
export function withoutImages(messages: ChatMessage[], model: string): ChatMessage[] {
  if (!messages.some(hasImage)) return messages;
  const note = `[image not shown: ${model} does not take images]`;
  return messages.map((message) => {
    if (!hasImage(message) || message.role !== 'user' || typeof message.content === 'string') return message;
    const text = message.content
      .map((part: ContentPart) => (part.type === 'text' ? part.text : note))
      .filter((t) => t.trim() !== '')
      .join('\n');
    return { ...message, content: text };
  });
}

function hasImage(message: ChatMessage): boolean {
  return (
    message.role === 'user' &&
    typeof message.content !== 'string' &&
    message.content.some((part) => part.type === 'image')
  );
}
