/**
 * A reply's HTML part: the model's Markdown rendered by marked, with raw HTML
 * in it escaped (shown as text, never interpreted), links kept only for
 * http(s) and mailto, and images shown as their text (no remote loads).
 */
import { safeHtml } from '../format/safe-html.js';

/** The HTML document of a reply written in Markdown. */
export function markdownToHtml(markdown: string): string {
  const body = safeHtml(markdown);
  return `<!doctype html><html><body>${body}</body></html>`;
}
