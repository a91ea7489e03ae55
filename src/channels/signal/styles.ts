/**
 * Markdown → Signal's styled text: the plain text plus style ranges
 * (`start:length:STYLE`, what signal-cli's `send` takes as `textStyle`), so
 * the person reads bold, italic, monospace, strikethrough and spoilers, not
 * Markdown's characters. marked's lexer parses (as for Telegram and Slack);
 * this walker writes the text and records a range per styled run. Offsets and
 * lengths count UTF-16 code units, as Signal does — which is what JavaScript
 * string lengths count, so an emoji before a bold word moves it by two.
 * Styles nest (a bold word in italics is two ranges over it).
 *
 * Forms: `**b**` BOLD, `*i*` ITALIC, `` `c` `` and fenced blocks MONOSPACE,
 * `~~s~~` STRIKETHROUGH, `||x||` SPOILER; headings bold; links as
 * `text (url)`; `•` bullets and numbers; `> ` before quoted lines; tables as
 * monospace rows. Signal has no code languages: a fenced block's info string
 * is shown as an italic label line above it (as Telegram's apps label a
 * block), so the reader still sees what the code is.
 */
import { Lexer, type MarkedToken, type Token, type Tokens } from 'marked';

export type SignalStyle = 'BOLD' | 'ITALIC' | 'MONOSPACE' | 'STRIKETHROUGH' | 'SPOILER';

/** One styled run. */
export interface StyleRange {
  start: number;
  length: number;
  style: SignalStyle;
}

/** A message as Signal takes it. */
export interface StyledText {
  text: string;
  styles: StyleRange[];
}

/**
 * Renders Markdown as Signal text with style ranges.
 *
 * @example
 * toSignalText('😀 **hi**') // => { text: '😀 hi', styles: [{ start: 3, length: 2, style: 'BOLD' }] }
 */
export function toSignalText(markdown: string): StyledText {
  const out = new Builder();
  renderBlocks(new Lexer({ gfm: true }).lex(markdown), out, '');
  return out.done();
}

/** `start:length:STYLE`, signal-cli's form of a range. */
export function styleArgument(range: StyleRange): string {
  return `${range.start}:${range.length}:${range.style}`;
}

/** The text written so far and its ranges. */
class Builder {
  text = '';
  readonly styles: StyleRange[] = [];

  write(text: string): void {
    this.text += text;
  }

  /** Writes what `body` writes, styled (nothing is recorded for an empty run). */
  styled(style: SignalStyle, body: () => void): void {
    const start = this.text.length;
    body();
    const length = this.text.length - start;
    if (length > 0) this.styles.push({ start, length, style });
  }

  /** Writes `body` after `separator`, or takes the separator back when `body` wrote nothing. */
  joined(separator: string, body: () => void): boolean {
    const mark = this.text.length;
    this.text += separator;
    const before = this.text.length;
    body();
    if (this.text.length > before) return true;
    this.text = this.text.slice(0, mark);
    return false;
  }

  /** The text without trailing blank space, ranges cut to it (in start order). */
  done(): StyledText {
    const text = this.text.trimEnd();
    const styles = this.styles
      .map((r) => ({ ...r, length: Math.min(r.length, text.length - r.start) }))
      .filter((r) => r.length > 0)
      .sort((a, b) => a.start - b.start || b.length - a.length);
    return { text, styles };
  }
}

function renderBlocks(tokens: Token[], out: Builder, indent: string): void {
  let first = true;
  for (const token of tokens) {
    if (out.joined(first ? '' : '\n\n', () => renderBlock(token as MarkedToken, out, indent))) first = false;
  }
}

function renderBlock(token: MarkedToken, out: Builder, indent: string): void {
  switch (token.type) {
    case 'space':
    case 'def':
      return;
    case 'paragraph':
      renderInline(token.tokens, out);
      return;
    case 'heading':
      out.styled('BOLD', () => renderInline(token.tokens, out));
      return;
    case 'code': {
      const label = (token.lang ?? '').trim().split(/\s+/)[0] ?? '';
      if (/^[\w#+.-]+$/.test(label)) {
        out.styled('ITALIC', () => out.write(label));
        out.write('\n');
      }
      out.styled('MONOSPACE', () => out.write(token.text));
      return;
    }
    case 'blockquote': {
      const inner = new Builder();
      renderBlocks(token.tokens, inner, '');
      quoteInto(inner.done(), out);
      return;
    }
    case 'list':
      renderList(token, out, indent);
      return;
    case 'table': {
      const cell = (c: Tokens.TableCell) => plainInline(c.tokens);
      const rows = [token.header.map(cell), ...token.rows.map((r) => r.map(cell))];
      out.styled('MONOSPACE', () => out.write(rows.map((r) => r.join(' | ')).join('\n')));
      return;
    }
    case 'hr':
      out.write('———');
      return;
    case 'html':
      out.write(token.text.trim());
      return;
    case 'text':
      if (token.tokens) renderInline(token.tokens, out);
      else out.write(token.text);
      return;
    default:
      renderInline([token], out);
  }
}

/** A quoted block: each line after `> `, its ranges moved along (two characters per line so far). */
function quoteInto(inner: StyledText, out: Builder): void {
  const base = out.text.length;
  const moved = (at: number) => base + at + 2 * inner.text.slice(0, at).split('\n').length;
  out.write(
    inner.text
      .split('\n')
      .map((line) => `> ${line}`)
      .join('\n'),
  );
  for (const r of inner.styles) {
    const start = moved(r.start);
    out.styles.push({ start, length: moved(r.start + r.length) - start, style: r.style });
  }
}

function renderList(list: Tokens.List, out: Builder, indent: string): void {
  const start = typeof list.start === 'number' ? list.start : 1;
  list.items.forEach((item, i) => {
    if (i > 0) out.write('\n');
    out.write(`${indent}${list.ordered ? `${start + i}. ` : '• '}`);
    let first = true;
    for (const child of item.tokens as MarkedToken[]) {
      if (child.type === 'list') {
        out.write('\n');
        renderList(child, out, `${indent}  `);
      } else if (out.joined(first ? '' : '\n', () => renderBlock(child, out, indent))) {
        first = false;
      }
    }
  });
}

function renderInline(tokens: Token[], out: Builder): void {
  for (const token of tokens as MarkedToken[]) {
    switch (token.type) {
      case 'strong':
        out.styled('BOLD', () => renderInline(token.tokens, out));
        break;
      case 'em':
        out.styled('ITALIC', () => renderInline(token.tokens, out));
        break;
      case 'del':
        out.styled('STRIKETHROUGH', () => renderInline(token.tokens, out));
        break;
      case 'codespan':
        out.styled('MONOSPACE', () => out.write(token.text));
        break;
      case 'br':
        out.write('\n');
        break;
      case 'link': {
        const label = plainInline(token.tokens);
        out.write(label === token.href || label === '' ? token.href : `${label} (${token.href})`);
        break;
      }
      case 'image':
        out.write(token.text ? `${token.text} (${token.href})` : token.href);
        break;
      case 'text':
        if ('tokens' in token && token.tokens) renderInline(token.tokens, out);
        else writeSpoilers(token.text, out);
        break;
      case 'escape':
      case 'html':
        out.write(token.text);
        break;
      default:
        out.write('raw' in token ? token.raw : '');
    }
  }
}

/** Plain text with `||spoilers||` (Discord's form, which models write) as SPOILER ranges. */
function writeSpoilers(text: string, out: Builder): void {
  let rest = text;
  for (let m = /\|\|([^|\n]+)\|\|/.exec(rest); m; m = /\|\|([^|\n]+)\|\|/.exec(rest)) {
    out.write(rest.slice(0, m.index));
    const hidden = m[1]!;
    out.styled('SPOILER', () => out.write(hidden));
    rest = rest.slice(m.index + m[0].length);
  }
  out.write(rest);
}

/** Inline tokens as plain text (link labels, table cells). */
function plainInline(tokens: Token[] | undefined): string {
  const out = new Builder();
  renderInline(tokens ?? [], out);
  return out.text;
}
