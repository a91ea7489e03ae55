/**
 * The model's Markdown as HTML for clients that render it (e-mail, Matrix):
 * marked with raw HTML in the Markdown escaped (shown as text, never
 * interpreted), links kept only for http(s) and mailto, and images shown as
 * their text (no remote loads).
 */
import { Marked, type Tokens } from 'marked';
import { escapeHtml } from './telegram-html.js';

const LINK_SCHEMES = /^(https?:|mailto:)/i;

const marked = new Marked({
  gfm: true,
  async: false,
  renderer: {
    html(token: Tokens.HTML | Tokens.Tag): string {
      return escapeHtml(token.text);
    },
    link(token: Tokens.Link): string {
      const label = this.parser.parseInline(token.tokens);
      if (!LINK_SCHEMES.test(token.href)) return label;
      return `<a href="${escapeHtml(token.href).replace(/"/g, '&quot;')}">${label}</a>`;
    },
    image(token: Tokens.Image): string {
      return escapeHtml(token.text || token.href);
    },
  },
});

/** The HTML of a Markdown text (no document around it). */
export function safeHtml(markdown: string): string {
  return marked.parse(markdown) as string;
}
