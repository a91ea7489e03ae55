/**
 * Markdown → Slack mrkdwn. marked's lexer parses the Markdown (the same
 * linear-time parser as Telegram's HTML); this walker writes Slack's forms:
 * `*bold*`, `_italic_`, `~strike~`, `` `code` ``, fenced blocks, `<url|text>`
 * links, `•` bullets and numbers, bold lines for headings, `>` quotes, and
 * escapes `&`, `<` and `>` everywhere else (Slack's only control characters).
 * A fence keeps its info string on the opening line: Slack has no syntax
 * highlighting and shows it as the block's first line, a label.
 */
import { Lexer, type MarkedToken, type Token, type Tokens } from 'marked';

/** Escapes text for Slack: `&`, `<` and `>` become entities (nothing else is special). */
export function escapeMrkdwn(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** Link schemes Slack opens; anything else is shown as its text. */
const LINK_SCHEMES = /^(https?:|mailto:)/i;

/**
 * Renders Markdown as Slack mrkdwn.
 *
 * @example
 * toSlackMrkdwn('**hi** [docs](https://x.org) `a<b`') // => '*hi* <https://x.org|docs> `a&lt;b`'
 */
export function toSlackMrkdwn(markdown: string): string {
  const tokens = new Lexer({ gfm: true }).lex(markdown);
  return renderBlocks(tokens, '').trim();
}

function renderBlocks(tokens: Token[], indent: string): string {
  const blocks: string[] = [];
  for (const token of tokens) {
    const out = renderBlock(token as MarkedToken, indent);
    if (out !== '') blocks.push(out);
  }
  return blocks.join('\n\n');
}

function renderBlock(token: MarkedToken, indent: string): string {
  switch (token.type) {
    case 'space':
    case 'def':
      return '';
    case 'paragraph':
      return renderInline(token.tokens);
    case 'heading':
      return `*${renderInline(token.tokens)}*`;
    case 'code': {
      const info = (token.lang ?? '').trim().split(/\s+/)[0] ?? '';
      const label = /^[\w#+.-]+$/.test(info) ? info : '';
      return `\`\`\`${label}\n${escapeMrkdwn(token.text)}\n\`\`\``;
    }
    case 'blockquote':
      return renderBlocks(token.tokens, '')
        .split('\n')
        .map((line) => `> ${line}`)
        .join('\n');
    case 'list':
      return renderList(token, indent);
    case 'table': {
      const cell = (c: Tokens.TableCell) => plainInline(c.tokens);
      const rows = [token.header.map(cell), ...token.rows.map((r) => r.map(cell))];
      return `\`\`\`\n${escapeMrkdwn(rows.map((r) => r.join(' | ')).join('\n'))}\n\`\`\``;
    }
    case 'hr':
      return '———';
    case 'html':
      return escapeMrkdwn(token.text.trim());
    case 'text':
      return token.tokens ? renderInline(token.tokens) : escapeMrkdwn(token.text);
    default:
      return renderInline([token]);
  }
}

function renderList(list: Tokens.List, indent: string): string {
  const start = typeof list.start === 'number' ? list.start : 1;
  return list.items
    .map((item, i) => {
      const marker = list.ordered ? `${start + i}.` : '•';
      const check = item.task ? (item.checked ? '☑ ' : '☐ ') : '';
      const inner = `${indent}    `;
      const parts: string[] = [];
      for (const token of item.tokens) {
        const c = token as MarkedToken;
        if (c.type === 'checkbox') continue;
        if (c.type === 'list') parts.push(`\n${renderList(c, inner)}`);
        else {
          const text = renderBlock(c, inner);
          if (text !== '') parts.push(parts.length > 0 ? `\n${inner}${text}` : text);
        }
      }
      return `${indent}${marker} ${check}${parts.join('')}`;
    })
    .join('\n');
}

/** Slack's mark for each emphasis token. */
const EMPHASIS = { strong: '*', em: '_', del: '~' } as const;

function renderInline(tokens: Token[]): string {
  let out = '';
  for (const raw of tokens) {
    const token = raw as MarkedToken;
    switch (token.type) {
      case 'strong':
      case 'em':
      case 'del': {
        const mark = EMPHASIS[token.type];
        out += `${mark}${renderInline(token.tokens)}${mark}`;
        break;
      }
      case 'codespan':
        out += `\`${escapeMrkdwn(token.text)}\``;
        break;
      case 'br':
        out += '\n';
        break;
      case 'link':
      case 'image': {
        const text = token.type === 'link' ? plainInline(token.tokens) : token.text || token.href;
        out += LINK_SCHEMES.test(token.href)
          ? `<${linkTarget(token.href)}|${escapeMrkdwn(text.replace(/\|/g, '¦'))}>`
          : escapeMrkdwn(text);
        break;
      }
      case 'text':
        out += token.tokens ? renderInline(token.tokens) : escapeMrkdwn(token.text);
        break;
      case 'escape':
      case 'html':
        out += escapeMrkdwn(token.text);
        break;
      case 'checkbox':
        break;
      default:
        out += escapeMrkdwn(token.raw);
    }
  }
  return out;
}

/** A URL inside `<…|…>`: escaped, and without the `|` and `>` that would end it early. */
function linkTarget(href: string): string {
  return escapeMrkdwn(href).replace(/\|/g, '%7C');
}

/** Inline tokens as plain text (link texts, table cells). */
function plainInline(tokens: Token[]): string {
  let out = '';
  for (const raw of tokens) {
    const token = raw as MarkedToken;
    if ('tokens' in token && Array.isArray(token.tokens)) out += plainInline(token.tokens);
    else if ('text' in token && typeof token.text === 'string') out += token.text;
    else out += token.raw;
  }
  return out;
}
