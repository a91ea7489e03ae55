/**
 * Markdown → Slack mrkdwn. marked's lexer parses the Markdown (the same
 * linear-time parser as Telegram's HTML); this walker writes Slack's forms:
 * `*bold*`, `_italic_`, `~strike~`, `` `code` ``, fenced blocks, `<url|text>`
 * links, `•` bullets and numbers, bold lines for headings, `>` quotes, and
 * escapes `&`, `<` and `>` everywhere else (Slack's only control characters).
 * A fence keeps its info string on the opening line: Slack has no syntax
 * highlighting and shows it as the block's first line, a label.
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
      return renderInline(token.tokens);
    case 'heading':
      return `*${renderInline(token.tokens)}*`;
    case 'code':
      return `\`\`\`${fenceLanguage(token.lang)}\n${escapeMrkdwn(token.text)}\n\`\`\``;
    case 'blockquote':
      return renderBlocks(token.tokens, '')
        .split('\n')
        .map((line) => `> ${line}`)
        .join('\n');
    case 'list':
      return renderList(token, indent, LIST);
    case 'table':
      return `\`\`\`\n${escapeMrkdwn(tableText(token))}\n\`\`\``;
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

/** Lists: `•` bullets, nested items four spaces in. */
const LIST: ListStyle<string> = {
  bullet: '•',
  indent: (indent) => indent,
  nest: (indent) => `${indent}    `,
  block: (token, indent) => renderBlock(token, indent),
};

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
