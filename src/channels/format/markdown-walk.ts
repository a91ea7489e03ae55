/**
 * What the Markdown renderers (telegram-html.ts, slack-mrkdwn.ts,
 * whatsapp.ts) share: marked's lexer (GFM, linear time), blocks joined by a
 * blank line, list items with their markers, task boxes and nesting, a
 * fence's language, and inline tokens as plain text. Each renderer writes
 * its own platform's forms around these.
 */
import { Lexer, type MarkedToken, type Token, type Tokens } from 'marked';

/** The Markdown's block tokens (GitHub-flavoured). */
export function lexMarkdown(markdown: string): Token[] {
  return new Lexer({ gfm: true }).lex(markdown);
}

/** Each block rendered by `render` in context `ctx`, the non-empty ones joined by a blank line. */
export function joinBlocks<C>(
  tokens: Token[],
  ctx: C,
  render: (token: MarkedToken, ctx: C) => string,
): string {
  const blocks: string[] = [];
  for (const token of tokens) {
    const out = render(token as MarkedToken, ctx);
    if (out !== '') blocks.push(out);
  }
  return blocks.join('\n\n');
}

/** How a renderer writes lists. */
export interface ListStyle<C> {
  /** The mark of an unordered item (`•`, `-`). */
  bullet: string;
  /** The indentation of items in `ctx`. */
  indent(ctx: C): string;
  /** The context of what an item holds (one level deeper). */
  nest(ctx: C): C;
  /** Renders one block inside an item. */
  block(token: MarkedToken, ctx: C): string;
}

/** A list: one line per item (`1.` or the bullet, `☐`/`☑` for tasks), nested lists indented below. */
export function renderList<C>(list: Tokens.List, ctx: C, style: ListStyle<C>): string {
  const indent = style.indent(ctx);
  const start = typeof list.start === 'number' ? list.start : 1;
  return list.items
    .map((item, i) => {
      const marker = list.ordered ? `${start + i}.` : style.bullet;
      const check = item.task ? (item.checked ? '☑ ' : '☐ ') : '';
      const inner = style.nest(ctx);
      const parts: string[] = [];
      for (const token of item.tokens) {
        const c = token as MarkedToken;
        if (c.type === 'checkbox') continue;
        if (c.type === 'list') parts.push(`\n${renderList(c, inner, style)}`);
        else {
          const text = style.block(c, inner);
          if (text !== '') parts.push(parts.length > 0 ? `\n${style.indent(inner)}${text}` : text);
        }
      }
      return `${indent}${marker} ${check}${parts.join('')}`;
    })
    .join('\n');
}

/** A fence's language: the first word of its info string when it is a plain name (`ts`, `c++`), else ''. */
export function fenceLanguage(info: string | undefined): string {
  const word = (info ?? '').trim().split(/\s+/)[0] ?? '';
  return /^[\w#+.-]+$/.test(word) ? word : '';
}

/** A table as plain rows, its cells joined by ` | ` (renderers show it in monospace). */
export function tableText(table: Tokens.Table): string {
  const cell = (c: Tokens.TableCell) => plainInline(c.tokens);
  const rows = [table.header.map(cell), ...table.rows.map((r) => r.map(cell))];
  return rows.map((r) => r.join(' | ')).join('\n');
}

/** Inline tokens as plain text (link texts, table cells). */
export function plainInline(tokens: Token[]): string {
  let out = '';
  for (const raw of tokens) {
    const token = raw as MarkedToken;
    if ('tokens' in token && Array.isArray(token.tokens)) out += plainInline(token.tokens);
    else if ('text' in token && typeof token.text === 'string') out += token.text;
    else out += token.raw;
  }
  return out;
}
