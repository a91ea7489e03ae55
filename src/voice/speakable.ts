/**
 * A reply made for the ear: the Markdown walked with marked's GFM lexer (as
 * the channel renderers' channels/format/markdown-walk.ts does; not imported,
 * so voice stays below channels), code blocks replaced by a pointer to the text,
 * links read as their words (a bare address as its site name), list items
 * and headings as sentences, tables and images left to the text. The result
 * is cut at a sentence end within `maxChars`; the rest stays text only.
 */
import { Lexer, type MarkedToken, type Token, type Tokens } from 'marked';

/** Said instead of a code block. */
export const CODE_SPOKEN = '(the code is in the text)';
/** Said instead of a table. */
export const TABLE_SPOKEN = '(the table is in the text)';

/**
 * The words to speak for `markdown`, at most `maxChars` long; '' when nothing is left to say.
 *
 * @example speakableText('See [the docs](https://nodejs.org/api).\n\n```js\nx()\n```', 1500)
 * // 'See the docs. (the code is in the text)'
 */
export function speakableText(markdown: string, maxChars: number): string {
  const sentences = new Lexer({ gfm: true })
    .lex(markdown)
    .map((t) => block(t as MarkedToken))
    .filter((s) => s !== '');
  const text = sentences.join(' ').replace(/\s+/g, ' ').trim();
  return cutAtSentence(text, maxChars);
}

/** `text` if it fits, else its longest start ending a sentence (or, lacking one, a clause or word) within `maxChars`. */
export function cutAtSentence(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const head = text.slice(0, maxChars + 1);
  for (const ending of [/[.!?…)](?=\s)/g, /[,;:](?=\s)/g, /\s/g]) {
    let last = -1;
    for (const m of head.matchAll(ending)) if (m.index < maxChars) last = m.index + (m[0].trim() ? 1 : 0);
    if (last > maxChars / 3) return head.slice(0, last).trim();
  }
  return head.slice(0, maxChars).trim();
}

function block(token: MarkedToken): string {
  switch (token.type) {
    case 'code':
      return CODE_SPOKEN;
    case 'table':
      return TABLE_SPOKEN;
    case 'heading':
    case 'paragraph':
      return sentence(inline(token.tokens));
    case 'text':
      return sentence(token.tokens ? inline(token.tokens) : token.text);
    case 'blockquote':
      return token.tokens
        .map((t) => block(t as MarkedToken))
        .filter((s) => s !== '')
        .join(' ');
    case 'list':
      return list(token);
    default:
      // hr, space, html, def: nothing to say.
      return '';
  }
}

/** Each item a sentence of its own; nested lists follow their item. */
function list(token: Tokens.List): string {
  return token.items
    .flatMap((item) =>
      item.tokens.map((t) => (t.type === 'checkbox' ? '' : block(t as MarkedToken))).filter((s) => s !== ''),
    )
    .join(' ');
}

function inline(tokens: Token[]): string {
  let out = '';
  for (const raw of tokens) {
    const token = raw as MarkedToken;
    switch (token.type) {
      case 'link':
        out += linkWords(token);
        break;
      case 'image':
      case 'html':
        break;
      case 'br':
        out += ' ';
        break;
      case 'codespan':
      case 'escape':
        out += token.text;
        break;
      default:
        if ('tokens' in token && Array.isArray(token.tokens)) out += inline(token.tokens);
        else if ('text' in token && typeof token.text === 'string') out += token.text;
    }
  }
  return out;
}

/** A link's words; an address shown as itself becomes its site's name (`nodejs.org`). */
function linkWords(link: Tokens.Link): string {
  const words = inline(link.tokens).trim();
  if (words !== '' && !/^(?:https?:\/\/|www\.|mailto:)/i.test(words)) return words;
  return siteName(link.href) ?? words;
}

function siteName(href: string): string | undefined {
  if (!URL.canParse(href)) return undefined;
  const url = new URL(href);
  if (url.protocol === 'mailto:') return 'an e-mail address';
  return url.hostname.replace(/^www\./, '') || undefined;
}

/** Text ended as a sentence (a full stop added when it ends without one). */
function sentence(text: string): string {
  const t = text.replace(/\s+/g, ' ').trim();
  if (t === '') return '';
  return /[.!?…:;)]$/.test(t) ? t : `${t}.`;
}
