/**
 * Markdown → Telegram's HTML subset (`parse_mode: 'HTML'`). marked's lexer
 * parses the Markdown; this walker renders each token to the few tags Telegram
 * accepts (b, i, s, code, pre, a, blockquote) and escapes everything else.
 */
import type { MarkedToken, Token, Tokens } from 'marked';
import {
  fenceLanguage,
  joinBlocks,
  type ListStyle,
  lexMarkdown,
  renderList,
  tableText,
} from './markdown-walk.js';

/** Escapes text for Telegram HTML: only `&`, `<` and `>` are special. */
export function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** Like {@link escapeHtml} but keeps the entities Telegram understands, as Markdown text does. */
function escapeText(text: string): string {
  return text
    .replace(/&(?!(?:amp|lt|gt|quot|#\d{1,7}|#x[0-9a-f]{1,6});)/gi, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;');
}

function escapeAttribute(text: string): string {
  return escapeHtml(text).replace(/"/g, '&quot;');
}

/** Link schemes Telegram opens; anything else is shown as plain text. */
const LINK_SCHEMES = /^(https?:|mailto:|tg:)/i;

/**
 * Renders Markdown as Telegram HTML. Headings become bold lines, lists become
 * text bullets (`•`) or numbers, tables become monospace rows, raw HTML is escaped.
 *
 * @example
 * toTelegramHtml('**hi** `a<b`') // => '<b>hi</b> <code>a&lt;b</code>'
 */
export function toTelegramHtml(markdown: string): string {
  return renderBlocks(lexMarkdown(markdown), { indent: '', inQuote: false }).trim();
}

/** Where a block is rendered: list indentation, and whether inside a quote (Telegram cannot nest quotes). */
interface Ctx {
  indent: string;
  inQuote: boolean;
}

function renderBlocks(tokens: Token[], ctx: Ctx): string {
  return joinBlocks(tokens, ctx, renderBlock);
}

function renderBlock(token: MarkedToken, ctx: Ctx): string {
  switch (token.type) {
    case 'space':
    case 'def':
      return '';
    case 'paragraph':
      return renderInline(token.tokens);
    case 'heading':
      return `<b>${renderInline(token.tokens)}</b>`;
    case 'code':
      return renderCode(token);
    case 'blockquote':
      if (ctx.inQuote) return renderBlocks(token.tokens, { indent: '', inQuote: true });
      return `<blockquote>${renderBlocks(token.tokens, { indent: '', inQuote: true })}</blockquote>`;
    case 'list':
      return renderList(token, ctx, LIST);
    case 'table':
      return renderTable(token);
    case 'hr':
      return '———';
    case 'html':
      return escapeHtml(token.text.trim());
    case 'text':
      return token.tokens ? renderInline(token.tokens) : escapeText(token.text);
    default:
      return renderInline([token]);
  }
}

function renderCode(token: Tokens.Code): string {
  const body = escapeHtml(token.text);
  const lang = fenceLanguage(token.lang);
  return lang ? `<pre><code class="language-${lang}">${body}</code></pre>` : `<pre>${body}</pre>`;
}

/** Lists: `•` bullets, nested items two spaces in. */
const LIST: ListStyle<Ctx> = {
  bullet: '•',
  indent: (ctx) => ctx.indent,
  nest: (ctx) => ({ indent: `${ctx.indent}  `, inQuote: ctx.inQuote }),
  block: (token, ctx) => renderBlock(token, ctx),
};

function renderTable(table: Tokens.Table): string {
  return `<pre>${escapeHtml(tableText(table))}</pre>`;
}

/** Telegram's tag for each emphasis token. */
const EMPHASIS_TAGS = { strong: 'b', em: 'i', del: 's' } as const;

function renderInline(tokens: Token[]): string {
  let out = '';
  for (const raw of tokens) {
    const token = raw as MarkedToken;
    switch (token.type) {
      case 'strong':
      case 'em':
      case 'del': {
        const tag = EMPHASIS_TAGS[token.type];
        out += `<${tag}>${renderInline(token.tokens)}</${tag}>`;
        break;
      }
      case 'codespan':
        out += `<code>${escapeHtml(token.text)}</code>`;
        break;
      case 'br':
        out += '\n';
        break;
      case 'link':
        out += LINK_SCHEMES.test(token.href)
          ? `<a href="${escapeAttribute(token.href)}">${renderInline(token.tokens)}</a>`
          : renderInline(token.tokens);
        break;
      case 'image':
        out += LINK_SCHEMES.test(token.href)
          ? `<a href="${escapeAttribute(token.href)}">${escapeHtml(token.text || token.href)}</a>`
          : escapeHtml(token.text);
        break;
      case 'text':
        out += token.tokens ? renderInline(token.tokens) : escapeText(token.text);
        break;
      case 'escape':
      case 'html':
        out += escapeHtml(token.text);
        break;
      case 'checkbox':
        break;
      default:
        out += escapeHtml(token.raw);
    }
  }
  return out;
}
