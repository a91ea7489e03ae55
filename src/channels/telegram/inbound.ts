/**
 * Reading a Telegram message: who sent it, whether it is addressed to the bot
 * (groups: mention, reply or `/cmd@bot`), the text without the mention, the
 * command, and which attachments to fetch. Pure functions over the Bot API JSON.
 */
import { type CommandWord, commandWord } from '../../commands/parse.js';
import { routeCommand } from '../../commands/router.js';
import type { Sender } from '../access.js';
import { megabytes, tooLargeNote } from '../download.js';

/** The fields of a Bot API `User` this adapter reads. */
export interface TgUser {
  id: number;
  is_bot: boolean;
  first_name: string;
  last_name?: string;
  username?: string;
}

/** A `MessageEntity` (offsets in UTF-16 code units, like JS strings). */
export interface TgEntity {
  type: string;
  offset: number;
  length: number;
  user?: { id: number };
}

interface TgFile {
  file_id: string;
  file_size?: number;
  mime_type?: string;
  file_name?: string;
}

/** The fields of a Bot API `Message` this adapter reads. */
export interface TgMessage {
  message_id: number;
  chat: { id: number; type: string; title?: string };
  from?: TgUser;
  text?: string;
  caption?: string;
  entities?: TgEntity[];
  caption_entities?: TgEntity[];
  message_thread_id?: number;
  is_topic_message?: boolean;
  reply_to_message?: { message_id: number; from?: TgUser };
  photo?: Array<TgFile & { width: number; height: number }>;
  voice?: TgFile;
  audio?: TgFile;
  document?: TgFile;
  video?: TgFile;
  video_note?: TgFile;
  animation?: TgFile;
  sticker?: TgFile & { emoji?: string };
}

/**
 * A press of one of the bot's inline buttons. `message` is the message holding the button
 * (absent for inline-mode messages; only `chat`, `message_id` and `date: 0` once it is no longer
 * accessible to the bot); `data` the button's `callback_data`.
 */
export interface TgCallbackQuery {
  id: string;
  from: TgUser;
  message?: Pick<TgMessage, 'message_id' | 'chat'> & Partial<TgMessage>;
  data?: string;
}

/** An update as getUpdates returns it; `message` and `callback_query` are consumed. */
export interface TgUpdate {
  update_id: number;
  message?: TgMessage;
  callback_query?: TgCallbackQuery;
}

/** The bot itself (from getMe). */
export interface BotIdentity {
  id: number;
  username: string;
}

export function isGroupChat(message: Pick<TgMessage, 'chat'>): boolean {
  return message.chat.type === 'group' || message.chat.type === 'supergroup';
}

/** `first_name last_name`, else `@username`, else the id. */
export function displayNameOf(user: TgUser): string {
  const name = [user.first_name, user.last_name].filter(Boolean).join(' ').trim();
  return name || (user.username ? `@${user.username}` : String(user.id));
}

export function senderOf(user: TgUser): Sender {
  return {
    id: String(user.id),
    displayName: displayNameOf(user),
    ...(user.username ? { username: user.username } : {}),
  };
}

/** The text (or caption) and its entities. */
export function textOf(message: TgMessage): { text: string; entities: TgEntity[] } {
  if (message.text !== undefined) return { text: message.text, entities: message.entities ?? [] };
  return { text: message.caption ?? '', entities: message.caption_entities ?? [] };
}

/** The `/word` (or `/word@bot`) a message's first line is, known or not. */
function leadingCommandWord(text: string): CommandWord | undefined {
  return commandWord(text.trimStart().split('\n', 1)[0]!);
}

function isBotMention(text: string, entity: TgEntity, bot: BotIdentity): boolean {
  if (entity.type === 'text_mention') return entity.user?.id === bot.id;
  if (entity.type !== 'mention') return false;
  return (
    text.slice(entity.offset, entity.offset + entity.length).toLowerCase() ===
    `@${bot.username}`.toLowerCase()
  );
}

/**
 * Whether a group message is for the bot: it mentions the bot, replies to one
 * of the bot's messages, or is one of its commands (`/new@bot`, or a bare `/new`).
 */
export function isAddressedToBot(message: TgMessage, bot: BotIdentity): boolean {
  const { text, entities } = textOf(message);
  if (entities.some((e) => isBotMention(text, e, bot))) return true;
  if (message.reply_to_message?.from?.id === bot.id) return true;
  const command = leadingCommandWord(text);
  if (!command) return false;
  if (command.target === undefined) return routeCommand(`/${command.word}`).runs !== 'text';
  return command.target.toLowerCase() === bot.username.toLowerCase();
}

/** True when the message is a command for another bot (`/new@otherbot`). */
export function isCommandForOtherBot(message: TgMessage, bot: BotIdentity): boolean {
  const command = leadingCommandWord(textOf(message).text);
  return command?.target !== undefined && command.target.toLowerCase() !== bot.username.toLowerCase();
}

/**
 * The text the model sees: mentions of the bot removed, `/cmd@bot` shortened
 * to `/cmd`, whitespace tidied.
 */
export function cleanText(message: TgMessage, bot: BotIdentity): string {
  const { text, entities } = textOf(message);
  let out = text;
  const mentions = entities.filter((e) => isBotMention(text, e, bot)).sort((a, b) => b.offset - a.offset);
  for (const e of mentions) {
    const replacement = e.type === 'text_mention' ? out.slice(e.offset, e.offset + e.length) : '';
    out = out.slice(0, e.offset) + replacement + out.slice(e.offset + e.length);
  }
  out = out.replace(/^\/([A-Za-z0-9_]+)@([A-Za-z0-9_]+)(?=\s|$)/, (all, name: string, target: string) =>
    target.toLowerCase() === bot.username.toLowerCase() ? `/${name}` : all,
  );
  return out
    .replace(/[ \t]{2,}/g, ' ')
    .replace(/^[\s,:]+/, '')
    .trim();
}

/** One attachment and how to fetch it. */
export interface MediaPlan {
  kind: 'image' | 'audio' | 'file';
  mimeType: string;
  fileId?: string;
  name?: string;
  size?: number;
  /** Fetch the bytes (images, audio under the limit). */
  download: boolean;
  /** Read by the model instead of the content. */
  note?: string;
}

/**
 * What to fetch for a message's attachments. Photos: the largest size under
 * `maxBytes`; image documents count as images; voice and audio are fetched for
 * transcription; other files are described (name, type, size), never fetched.
 */
export function planMedia(message: TgMessage, maxBytes: number): MediaPlan[] {
  const plans: MediaPlan[] = [];
  if (message.photo && message.photo.length > 0) {
    const fitting = message.photo.filter((p) => p.file_size === undefined || p.file_size <= maxBytes);
    const best = fitting.sort((a, b) => b.width * b.height - a.width * a.height)[0];
    if (best) {
      plans.push({
        kind: 'image',
        mimeType: 'image/jpeg',
        fileId: best.file_id,
        download: true,
        size: best.file_size,
      });
    } else {
      const smallest = Math.min(...message.photo.map((p) => p.file_size ?? 0));
      plans.push({
        kind: 'image',
        mimeType: 'image/jpeg',
        size: smallest,
        download: false,
        note: tooLargeNote(smallest, maxBytes),
      });
    }
  }
  const audio = message.voice
    ? { file: message.voice, mime: 'audio/ogg', name: 'voice.ogg' }
    : message.audio
      ? { file: message.audio, mime: 'audio/mpeg', name: message.audio.file_name ?? 'audio' }
      : undefined;
  if (audio) plans.push(fetchable('audio', audio.file, audio.mime, audio.name, maxBytes));
  const doc = message.document;
  if (doc) {
    const mime = doc.mime_type ?? 'application/octet-stream';
    if (mime.startsWith('image/')) plans.push(fetchable('image', doc, mime, doc.file_name, maxBytes));
    else plans.push(describe(doc, mime, doc.file_name ?? 'file', 'document'));
  }
  if (message.video) plans.push(describe(message.video, 'video/mp4', 'video', 'video'));
  if (message.video_note) plans.push(describe(message.video_note, 'video/mp4', 'video note', 'video note'));
  if (message.animation) plans.push(describe(message.animation, 'video/mp4', 'animation', 'animation'));
  if (message.sticker) {
    const emoji = message.sticker.emoji ? ` ${message.sticker.emoji}` : '';
    plans.push({
      kind: 'file',
      mimeType: 'image/webp',
      name: 'sticker',
      download: false,
      note: `a sticker${emoji}`,
    });
  }
  return plans;
}

function fetchable(
  kind: 'image' | 'audio',
  file: TgFile,
  mimeType: string,
  name: string | undefined,
  maxBytes: number,
): MediaPlan {
  const mime = file.mime_type ?? mimeType;
  const base = {
    kind,
    mimeType: mime,
    ...(name ? { name } : {}),
    ...(file.file_size ? { size: file.file_size } : {}),
  };
  if (file.file_size !== undefined && file.file_size > maxBytes) {
    return { ...base, download: false, note: tooLargeNote(file.file_size, maxBytes) };
  }
  return { ...base, fileId: file.file_id, download: true };
}

function describe(file: TgFile, fallbackMime: string, name: string, what: string): MediaPlan {
  const mimeType = file.mime_type ?? fallbackMime;
  const size = file.file_size;
  const sizeText = size !== undefined ? `, ${megabytes(size)}` : '';
  return {
    kind: 'file',
    mimeType,
    name: file.file_name ?? name,
    ...(size !== undefined ? { size } : {}),
    download: false,
    note: `${what} "${file.file_name ?? name}" (${mimeType}${sizeText}) was attached; its content is not available`,
  };
}
