/**
 * What a `POST /v1/chat/completions` body means to magpie. magpie keeps the
 * conversation itself, so only the last message is new input: it must be the
 * user's, and what the client resends of earlier turns (and its system
 * prompt: magpie has its own) is not taken again. Its text parts become the
 * message; its `image_url` parts become images (read by images.ts). The
 * client's own `tools` are refused: magpie's tools are its own.
 */
import { z } from 'zod';

/** A part of a message's content, as OpenAI's clients send them. */
const ContentPartSchema = z.looseObject({
  type: z.string(),
  text: z.string().optional(),
  image_url: z.union([z.string(), z.looseObject({ url: z.string() })]).optional(),
});

const MessageSchema = z.looseObject({
  role: z.string(),
  content: z.union([z.string(), z.array(ContentPartSchema), z.null()]).optional(),
});

/** The fields of a chat completion request magpie reads (others are accepted and ignored). */
export const ChatRequestSchema = z.looseObject({
  model: z.string().min(1).max(200),
  messages: z.array(MessageSchema).min(1),
  stream: z.boolean().nullish(),
  stream_options: z.looseObject({ include_usage: z.boolean().nullish() }).nullish(),
  user: z.string().max(256).nullish(),
  tools: z.array(z.unknown()).nullish(),
  functions: z.array(z.unknown()).nullish(),
});

/** The request as magpie takes it. */
export interface ChatRequest {
  /** The agent asked for. */
  model: string;
  stream: boolean;
  includeUsage: boolean;
  /** The request's `user`, when given (names the session). */
  user: string | undefined;
  /** The new input's text (its text parts, one per line). */
  text: string;
  /** The URLs of its images (data: or http(s)), in order. */
  imageUrls: string[];
}

/** A request magpie refuses, with the OpenAI error fields to answer it with. */
export interface RequestProblem {
  status: 400;
  message: string;
  param?: string;
}

/** Reads a parsed JSON body; a problem names the field, as OpenAI's 400s do. */
export function readChatRequest(body: unknown): ChatRequest | RequestProblem {
  const parsed = ChatRequestSchema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const param = issue?.path.join('.') || undefined;
    return {
      status: 400,
      message: `invalid request: ${param ? `${param}: ` : ''}${issue?.message ?? 'not a chat completion request'}`,
      ...(param ? { param } : {}),
    };
  }
  const r = parsed.data;
  if ((r.tools?.length ?? 0) > 0 || (r.functions?.length ?? 0) > 0) {
    return {
      status: 400,
      param: r.tools?.length ? 'tools' : 'functions',
      message:
        "magpie uses its own tools (memory, files, the web, schedules) and does not run a client's tools: send the request without `tools`.",
    };
  }
  const last = r.messages[r.messages.length - 1];
  if (last?.role !== 'user') {
    return {
      status: 400,
      param: 'messages',
      message:
        "the last message must be the user's: magpie keeps the conversation and answers the newest message",
    };
  }
  const texts: string[] = [];
  const imageUrls: string[] = [];
  const content = last.content ?? '';
  if (typeof content === 'string') texts.push(content);
  else {
    for (const part of content) {
      if (part.type === 'text' && typeof part.text === 'string') texts.push(part.text);
      else if (part.type === 'image_url' && part.image_url !== undefined)
        imageUrls.push(typeof part.image_url === 'string' ? part.image_url : part.image_url.url);
      else
        return {
          status: 400,
          param: 'messages',
          message: `content parts of type "${part.type.slice(0, 40)}" are not supported (text and image_url are)`,
        };
    }
  }
  const text = texts.join('\n').trim();
  if (text === '' && imageUrls.length === 0)
    return { status: 400, param: 'messages', message: 'the last message is empty' };
  return {
    model: r.model,
    stream: r.stream === true,
    includeUsage: r.stream_options?.include_usage === true,
    user: r.user ?? undefined,
    text,
    imageUrls,
  };
}
