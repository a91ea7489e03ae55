/**
 * Converts our provider-neutral messages and tool definitions (camelCase) to
 * the shapes the OpenAI chat-completions API takes. Only known fields are
 * copied, so stray fields (e.g. reasoning text read back from a session) are
 * never sent back to the model.
 */
import type { OpenAI } from 'openai';
import type { ChatMessage, ContentPart, ToolDefinition } from '../types.js';

type SdkMessage = OpenAI.ChatCompletionMessageParam;
type SdkTool = OpenAI.ChatCompletionTool;
type SdkUserPart = OpenAI.ChatCompletionContentPartText | OpenAI.ChatCompletionContentPartImage;

/** One of our messages as the API wants it. */
export function toSdkMessage(message: ChatMessage): SdkMessage {
  switch (message.role) {
    case 'system':
      return { role: 'system', content: message.content };
    case 'user': {
      const content = typeof message.content === 'string' ? message.content : message.content.map(toSdkPart);
      return message.name ? { role: 'user', content, name: message.name } : { role: 'user', content };
    }
    case 'assistant': {
      const calls = message.toolCalls ?? [];
      if (calls.length === 0) return { role: 'assistant', content: message.content ?? '' };
      return {
        role: 'assistant',
        content: message.content,
        tool_calls: calls.map((call) => ({
          id: call.id,
          type: 'function',
          function: { name: call.name, arguments: call.arguments },
        })),
      };
    }
    case 'tool':
      return { role: 'tool', tool_call_id: message.toolCallId, content: message.content };
  }
}

/** Our tool definitions as API `tools`; `undefined` when there are none, so the field is left out. */
export function toSdkTools(tools: ToolDefinition[] | undefined): SdkTool[] | undefined {
  if (!tools || tools.length === 0) return undefined;
  return tools.map((tool) => ({
    type: 'function',
    function: { name: tool.name, description: tool.description, parameters: tool.parameters },
  }));
}

function toSdkPart(part: ContentPart): SdkUserPart {
  if (part.type === 'text') return { type: 'text', text: part.text };
  return { type: 'image_url', image_url: { url: part.url } };
}
