/**
 * Sends one OutboundMessage to Slack: the Markdown split under
 * SLACK_TEXT_LIMIT characters (fences closed and reopened, chunk.ts), each
 * part turned into mrkdwn and posted with chat.postMessage in order, into the
 * message's thread. The last part carries the actions as buttons. The Web
 * client is built with `rejectRateLimitedCalls`, so a 429 is
 * DELIVERY_TRANSIENT carrying its Retry-After; Slack's own refusals
 * (channel_not_found, not_in_channel…) are DELIVERY_PERMANENT. A spoken reply
 * is uploaded as an audio file ({@link deliverVoice}).
 */
import type { webApi } from '@slack/bolt';
import { AppError, describeError } from '../../errors/index.js';
import type { OutboundAction, OutboundMessage } from '../../messages/messages.js';
import { splitReply } from '../chunk.js';
import { toSlackMrkdwn } from '../format/slack-mrkdwn.js';
import { blocksWith } from './buttons.js';

/**
 * The longest part magpie posts, in characters of Markdown: Slack takes up to 40,000 in `text`
 * but asks for under 4,000, and a `section` block (where a part with buttons goes) takes 3,000.
 */
export const SLACK_TEXT_LIMIT = 3000;

/** Slack errors no retry can fix. */
const PERMANENT_ERRORS = new Set([
  'channel_not_found',
  'not_in_channel',
  'is_archived',
  'msg_too_long',
  'no_text',
  'invalid_blocks',
  'message_not_found',
  'cant_update_message',
  'edit_window_closed',
  'invalid_auth',
  'not_authed',
  'account_inactive',
  'restricted_action',
  'missing_scope',
]);

/** Where a message goes: its channel and, when there is one, its thread. */
export interface SlackTarget {
  chatId: string;
  threadId?: string;
}

/** The final parts of a reply, as mrkdwn (at most MAX_REPLY_PARTS, see chunk.ts). */
export function slackParts(content: string): string[] {
  return splitReply(content, SLACK_TEXT_LIMIT).map(toSlackMrkdwn);
}

/** chat.postMessage's arguments for one part. */
export function postArgs(
  target: SlackTarget,
  text: string,
  actions?: readonly OutboundAction[],
): { channel: string; text: string; thread_ts?: string; blocks?: unknown[]; unfurl_links: false } {
  const blocks = blocksWith(text, actions);
  return {
    channel: target.chatId,
    text,
    ...(target.threadId ? { thread_ts: target.threadId } : {}),
    ...(blocks ? { blocks } : {}),
    unfurl_links: false,
  };
}

/** Posts every part of `message`, in order, skipping parts `alreadySent` says went out. Returns the parts count. */
export async function deliverMessage(
  web: webApi.WebClient,
  message: OutboundMessage,
  alreadySent = 0,
  onPartSent: (index: number) => void = () => {},
): Promise<number> {
  const parts = slackParts(message.content);
  for (let index = alreadySent; index < parts.length; index++) {
    const last = index === parts.length - 1;
    try {
      await web.chat.postMessage(postArgs(message, parts[index]!, last ? message.actions : undefined));
    } catch (err) {
      throw toDeliveryError(err, message.chatId);
    }
    onPartSent(index);
  }
  return parts.length;
}

/**
 * Sends a spoken reply (OGG/Opus) as an audio file in the conversation (its thread when it has one)
 * with the Web client's `files.uploadV2` (files.getUploadURLExternal, the upload, then
 * files.completeUploadExternal); Slack shows it with a player.
 */
export async function deliverVoice(web: webApi.WebClient, target: SlackTarget, ogg: Buffer): Promise<void> {
  try {
    const file = { file: ogg, filename: 'reply.ogg', title: 'Spoken reply' };
    await web.filesUploadV2(
      target.threadId
        ? { ...file, channel_id: target.chatId, thread_ts: target.threadId }
        : { ...file, channel_id: target.chatId },
    );
  } catch (err) {
    throw toDeliveryError(err, target.chatId);
  }
}

/** Classifies a Web API failure (by the SDK's error codes, not its text). */
export function toDeliveryError(err: unknown, channel: string): AppError {
  if (err instanceof AppError) return err;
  const e = err as { code?: string; retryAfter?: number; data?: { error?: string }; statusCode?: number };
  if (e.code === 'slack_webapi_rate_limited_error') {
    const retryAfterMs = Math.max(0, (e.retryAfter ?? 1) * 1000);
    return new AppError(
      'DELIVERY_TRANSIENT',
      `slack rate-limited channel ${channel} (retry in ${retryAfterMs} ms)`,
      {
        cause: err,
        transient: true,
        retryAfterMs,
      },
    );
  }
  if (e.code === 'slack_webapi_platform_error') {
    const error = e.data?.error ?? 'unknown';
    const permanent = PERMANENT_ERRORS.has(error);
    return new AppError(
      permanent ? 'DELIVERY_PERMANENT' : 'DELIVERY_TRANSIENT',
      `slack refused the message for channel ${channel}: ${error}`,
      { cause: err, transient: !permanent },
    );
  }
  if (e.code === 'slack_webapi_http_error') {
    const status = e.statusCode ?? 0;
    const permanent = status >= 400 && status < 500 && status !== 429;
    return new AppError(
      permanent ? 'DELIVERY_PERMANENT' : 'DELIVERY_TRANSIENT',
      `slack answered HTTP ${status} for channel ${channel}`,
      { cause: err, transient: !permanent },
    );
  }
  return new AppError(
    'DELIVERY_TRANSIENT',
    `slack send failed for channel ${channel}: ${describeError(err)}`,
    {
      cause: err,
      transient: true,
    },
  );
}
