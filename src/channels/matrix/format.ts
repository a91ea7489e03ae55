/**
 * A reply part as Matrix shows it: `formatted_body` in `org.matrix.custom.html`
 * (the model's Markdown rendered by marked; raw HTML in it escaped, links kept
 * only for http(s), mailto and matrix.to, images shown as their text so no
 * remote media is loaded) beside the plain `body` (the Markdown itself, which
 * clients without HTML show and read as text).
 */
import { safeHtml } from '../format/safe-html.js';

/** The HTML of a Markdown part (no document around it), trailing newline dropped. */
export function toMatrixHtml(markdown: string): string {
  return safeHtml(markdown).trim();
}

/** An `m.room.message` text content: HTML with the Markdown as its plain body. */
export function htmlContent(markdown: string): {
  msgtype: 'm.text';
  body: string;
  format: string;
  formatted_body: string;
} {
  return {
    msgtype: 'm.text',
    body: markdown,
    format: 'org.matrix.custom.html',
    formatted_body: toMatrixHtml(markdown),
  };
}

/** Plain text content (a preview being written, a short direct answer). */
export function plainContent(text: string): { msgtype: 'm.text'; body: string } {
  return { msgtype: 'm.text', body: text };
}
