/**
 * Markdown → WhatsApp's formatting. marked's lexer parses the Markdown (the
 * same linear-time parser as Telegram's HTML and Slack's mrkdwn); this walker
 * writes WhatsApp's forms: `*bold*`, `_italic_`, `~strike~`, `` `code` ``,
 * ```` ``` ```` blocks (monospace), `- ` bullets and `1. ` numbers, `> `
 * quotes, bold lines for headings, links as `text (url)` (WhatsApp links bare
 * URLs itself and has no link markup), tables as monospace blocks.
 *
 * WhatsApp has no escapes and no entities: text is written as the model wrote
 * it (`<`, `&` stay as they are), so a literal `*word*` the model escaped in
 * Markdown shows bold. A fence keeps its info string on the opening line, as
 * on Slack: WhatsApp has no highlighting and shows it as the block's first
 * line, a label; the chunker (chunk.ts) closes and reopens these blocks when
 * it cuts a reply.
 */
import type { MarkedToken, Token } from 'marked';
import {
  fenceLanguage,
  joinBlocks,
  type ListStyle,
  lexMarkdown,
  plainInline,
  renderList,
  tableText,
} from './markdown-walk.js';

/** WhatsApp's mark for each emphasis token. */
const EMPHASIS = { strong: '*', em: '_', del: '~' } as const;
type Mark = (typeof EMPHASIS)[keyof typeof EMPHASIS];

/**
 * Renders Markdown in WhatsApp's formatting.
 *
 * @example
 * toWhatsApp('**hi** _there_ ~~old~~ [docs](https://x.org)') // => '*hi* _there_ ~old~ docs (https://x.org)'
 */
export function toWhatsApp(markdown: string): string {
  return renderBlocks(lexMarkdown(markdown), '').trim();
}

function renderBlocks(tokens: Token[], indent: string): string {
  return joinBlocks(tokens, indent, renderBlock);
}

function renderBlock(token: MarkedToken, indent: string): string {
  switch (token.type) {
    case 'space':
    case 'def':
      return '';
    case 'paragraph':
      return renderInline(token.tokens, new Set());
    case 'heading': {
      // A heading is a bold line; bold inside it is not marked again.
      const text = renderInline(token.tokens, new Set<Mark>(['*'])).trim();
      return text === '' ? '' : `*${text}*`;
    }
    case 'code':
      return `\`\`\`${fenceLanguage(token.lang)}\n${token.text}\n\`\`\``;
    case 'blockquote':
      return renderBlocks(token.tokens, '')
        .split('\n')
        .map((line) => (line === '' ? '>' : `> ${line}`))
        .join('\n');
    case 'list':
      return renderList(token, indent, LIST);
    case 'table':
      return `\`\`\`\n${tableText(token)}\n\`\`\``;
    case 'hr':
      return '———';
    case 'html':
      return token.text.trim();
    case 'text':
      return token.tokens ? renderInline(token.tokens, new Set()) : token.text;
    default:
      return renderInline([token], new Set());
  }
}

/** Lists: `- ` bullets (WhatsApp's own list syntax), nested items three spaces in. */
const LIST: ListStyle<string> = {
  bullet: '-',
  indent: (indent) => indent,
  nest: (indent) => `${indent}   `,
  block: (token, indent) => renderBlock(token, indent),
};

/** Inline tokens in WhatsApp's forms; `open` are the marks already around them (not repeated inside). */
function renderInline(tokens: Token[], open: ReadonlySet<Mark>): string {
  let out = '';
  for (const raw of tokens) {
    const token = raw as MarkedToken;
    switch (token.type) {
      case 'strong':
      case 'em':
      case 'del': {
        const mark = EMPHASIS[token.type];
        const inner = renderInline(token.tokens, new Set([...open, mark]));
        out += open.has(mark) || inner.trim() === '' ? inner : `${mark}${inner}${mark}`;
        break;
      }
      case 'codespan':
        out += `\`${token.text}\``;
        break;
      case 'br':
        out += '\n';
        break;
      case 'link':
        out += linkText(plainInline(token.tokens), token.href);
        break;
      case 'image':
        out += linkText(token.text, token.href);
        break;
      case 'text':
        out += token.tokens ? renderInline(token.tokens, open) : token.text;
        break;
      case 'escape':
      case 'html':
        out += token.text;
        break;
      case 'checkbox':
        break;
      default:
        out += token.raw;
    }
  }
  return out;
}

/** A link as WhatsApp shows one: the URL alone when the text is the URL, else `text (url)`. */
function linkText(text: string, href: string): string {
  const target = href.replace(/^mailto:/i, '');
  const shown = text.trim();
  if (shown === '') return target;
  // An autolink (`<https://…>`, `www.…`, an address) shows as written.
  if (shown === href || shown === target || `http://${shown}` === href) return shown;
  return `${shown} (${target})`;
}
