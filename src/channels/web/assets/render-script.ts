/**
 * The chat page's Markdown renderer, served as the ES module `/chat/render.js`
 * (the page imports it; the tests import these same bytes in Node). Safe by
 * construction: every line is HTML-escaped first, and only then are the few
 * constructs it knows turned into markup built from the escaped text — code
 * fences (``` and ~~~, an unclosed one runs to the end, as while an answer
 * streams in), inline code, bold, italics, strike-through, headings, links
 * (http and https only, `rel="noopener noreferrer"`, `target="_blank"`) and
 * line breaks. No model or user text ever reaches the page unescaped.
 *
 * Written as plain browser JavaScript in a string (no build step); a backtick
 * is spelled `\x60` inside it.
 */

/** The source of `/chat/render.js`: exports `escapeHtml(text)` and `renderMarkdown(text)`. */
export const RENDER_SCRIPT = String.raw`// magpie chat: a small, safe Markdown renderer (escape first, then format).
const ENTITIES = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
const FENCE_OPEN = /^ {0,3}(\x60{3,}|~{3,})[ \t]*([^\s\x60]*)[^\x60]*$/;
const HEADING = /^ {0,3}#{1,6}[ \t]+(.*?)[ \t#]*$/;
const BULLET = /^( *)[-*+][ \t]+/;
const SLOT = /\u0000(\d+)\u0000/g;

/** Escapes text for HTML content and double- or single-quoted attribute values. */
export function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => ENTITIES[c]);
}

/** Markdown source (possibly cut mid-construct) to safe HTML. */
export function renderMarkdown(source) {
  const lines = String(source).replace(/\r\n?/g, '\n').replace(/\u0000/g, '\uFFFD').split('\n');
  const out = [];
  let para = [];
  const flush = () => {
    if (para.length > 0) out.push('<p>' + para.map(inline).join('<br>') + '</p>');
    para = [];
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const fence = FENCE_OPEN.exec(line);
    if (fence) {
      flush();
      const body = [];
      let j = i + 1;
      while (j < lines.length && !closes(lines[j], fence[1])) body.push(lines[j++]);
      i = j;
      const lang = fence[2].replace(/[^\w+#.-]/g, '').slice(0, 32);
      const cls = lang ? ' class="lang-' + escapeHtml(lang) + '"' : '';
      out.push('<pre><code' + cls + '>' + escapeHtml(body.join('\n')) + '</code></pre>');
      continue;
    }
    if (line.trim() === '') {
      flush();
      continue;
    }
    const heading = HEADING.exec(line);
    if (heading) {
      flush();
      out.push('<p class="heading">' + inline(heading[1]) + '</p>');
      continue;
    }
    para.push(line.replace(BULLET, (_m, indent) => indent + '\u2022 '));
  }
  flush();
  return out.join('');
}

/** Whether a line closes a fence opened by marker (the same character, at least as many). */
function closes(line, marker) {
  const t = line.trim();
  if (t.length < marker.length || line.length - line.trimStart().length > 3) return false;
  for (const c of t) if (c !== marker[0]) return false;
  return true;
}

/** A link to an http(s) URL taken from escaped text; the label is escaped HTML already. */
function link(url, label) {
  return '<a href="' + url + '" rel="noopener noreferrer" target="_blank">' + label + '</a>';
}

/** One line of escaped text with inline code, links and emphasis turned into markup. */
function inline(raw) {
  const slots = [];
  const keep = (html) => '\u0000' + (slots.push(html) - 1) + '\u0000';
  let s = escapeHtml(raw);
  s = s.replace(/(\x60+)([^\x60]|[^\x60][\s\S]*?[^\x60])\1(?!\x60)/g, (_m, _ticks, code) =>
    keep('<code>' + code.trim() + '</code>'),
  );
  s = s.replace(/\[([^\]\u0000]+)\]\((https?:\/\/[^\s()\u0000]+)\)/gi, (_m, label, url) =>
    keep(link(url, emphasis(label))),
  );
  s = s.replace(/\bhttps?:\/\/(?:(?!&(?:quot|lt|gt|#39);)[^\s\u0000])+/gi, (url) => {
    const bare = url.replace(/[.,;:!?)\]*_~]+$/, '');
    return keep(link(bare, bare)) + url.slice(bare.length);
  });
  s = emphasis(s);
  for (let round = 0; round < 3 && SLOT.test(s); round++) {
    SLOT.lastIndex = 0;
    s = s.replace(SLOT, (_m, n) => slots[Number(n)]);
  }
  return s;
}

/** Bold, italics and strike-through in escaped text. */
function emphasis(s) {
  return s
    .replace(/\*\*(?=\S)([\s\S]*?\S)\*\*/g, '<strong>$1</strong>')
    .replace(/(^|[^\w])__(?=\S)([\s\S]*?\S)__(?!\w)/g, '$1<strong>$2</strong>')
    .replace(/(^|[^*\w])\*(?=[^\s*])([^*]*?[^\s*])\*(?![*\w])/g, '$1<em>$2</em>')
    .replace(/(^|[^\w])_(?=[^\s_])([^_]*?[^\s_])_(?!\w)/g, '$1<em>$2</em>')
    .replace(/~~(?=\S)([\s\S]*?\S)~~/g, '<del>$1</del>');
}
`;
