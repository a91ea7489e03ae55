/**
 * A small HTML → readable text conversion for web_fetch: drops scripts,
 * styles and tags, keeps block structure as line breaks and link targets in
 * brackets, and decodes entities. htmlparser2's streaming parser reads the
 * page in one linear pass (a page is attacker-controlled text: no regex over
 * it may backtrack). Not a browser; good enough for a model to read a page.
 */
import { Tokenizer, type TokenizerCallbacks } from 'htmlparser2';

// Re-exported for callers that convert pages too; snippets import entities.js.
export { decodeEntities } from './entities.js';

/** Elements whose content is not page text. */
const HIDDEN = new Set(['script', 'style', 'noscript', 'template', 'svg', 'head']);

/** Elements that start and end a line. */
const BLOCKS = new Set(
  'address article aside blockquote dd div dl dt fieldset figcaption figure footer form h1 h2 h3 h4 h5 h6 header hr li main nav ol p pre section table tr ul'.split(
    ' ',
  ),
);

/** A link target worth showing: http(s), up to the first quote, space or `>`. */
const HREF = /^https?:[^"'\s>]+/i;

/** Readable text of an HTML document (title first when there is one). */
export function htmlToText(html: string): string {
  const reader = new TextReader(html);
  const tokenizer = new Tokenizer({ decodeEntities: true }, reader);
  tokenizer.write(html);
  tokenizer.end();
  return reader.result();
}

/**
 * Tokenizer callbacks building the text. htmlparser2's Tokenizer is linear; its
 * Parser is not used because it keeps open elements in an array it `unshift`s and
 * searches (quadratic on 300,000 unclosed tags). No element stack is needed here:
 * a depth count of hidden elements and the open link are enough.
 */
class TextReader implements TokenizerCallbacks {
  private readonly out: string[] = [];
  private hidden = 0;
  private title: string[] | undefined;
  private titleDone = false;
  /** The open http(s) link: its target and the text read inside it. */
  private link: { href: string; label: string[] } | undefined;
  /** The tag being read, its current attribute and the href it gave. */
  private tag = '';
  private attribute = '';
  private value: string[] = [];
  private href: string | undefined;

  constructor(private readonly html: string) {}

  result(): string {
    if (this.link) this.out.push(this.link.label.join(''));
    const text = fold(this.out.join(''));
    const heading = this.title ? fold(this.title.join('')) : '';
    return heading && !text.startsWith(heading) ? `${heading}\n\n${text}` : text;
  }

  onopentagname(start: number, end: number): void {
    this.tag = this.html.slice(start, end).toLowerCase();
    this.href = undefined;
  }
  onattribname(start: number, end: number): void {
    this.attribute = this.html.slice(start, end).toLowerCase();
    this.value = [];
  }
  onattribdata(start: number, end: number): void {
    this.value.push(this.html.slice(start, end));
  }
  onattribentity(codepoint: number): void {
    this.value.push(String.fromCodePoint(codepoint));
  }
  onattribend(): void {
    if (this.attribute === 'href' && this.href === undefined) this.href = this.value.join('');
  }
  onopentagend(): void {
    this.open(this.tag);
  }
  onselfclosingtag(): void {
    this.open(this.tag);
    if (HIDDEN.has(this.tag)) this.close(this.tag);
  }
  onclosetag(start: number, end: number): void {
    this.close(this.html.slice(start, end).toLowerCase());
  }
  ontext(start: number, end: number): void {
    this.text(this.html.slice(start, end));
  }
  ontextentity(codepoint: number): void {
    this.text(String.fromCodePoint(codepoint));
  }
  oncdata(): void {}
  oncomment(): void {}
  ondeclaration(): void {}
  onprocessinginstruction(): void {}
  onend(): void {}

  private open(name: string): void {
    if (HIDDEN.has(name)) this.hidden++;
    if (name === 'title' && !this.titleDone) this.title = [];
    if (this.hidden > 0) return;
    if (name === 'a') {
      const href = HREF.exec((this.href ?? '').trim())?.[0];
      this.link = href === undefined ? undefined : { href, label: [] };
    } else if (this.link)
      return; // tags inside a link's label are dropped
    else if (name === 'br') this.out.push('\n');
    else if (name === 'li') this.out.push('\n- ');
    else if (BLOCKS.has(name)) this.out.push('\n');
  }

  private close(name: string): void {
    if (HIDDEN.has(name)) this.hidden = Math.max(0, this.hidden - 1);
    if (name === 'title' && this.title) this.titleDone = true;
    if (this.hidden > 0) return;
    if (name === 'a' && this.link) {
      const { href, label } = this.link;
      const text = label.join('').trim();
      this.out.push(text && text !== href ? `${text} [${href}]` : href);
      this.link = undefined;
    } else if (this.link) return;
    else if (BLOCKS.has(name)) this.out.push('\n');
    else if (name === 'td' || name === 'th') this.out.push('\t');
  }

  private text(text: string): void {
    if (this.title && !this.titleDone) this.title.push(text);
    if (this.hidden > 0) return;
    if (this.link) this.link.label.push(text);
    else this.out.push(text);
  }
}

/** Blanks folded: one space within a line, no spaces around line breaks, no empty lines. */
function fold(s: string): string {
  return s
    .replace(/[ \t\f\v\r\u00a0]+/g, ' ')
    .replace(/ ?\n ?/g, '\n')
    .replace(/\n{2,}/g, '\n')
    .trim();
}
