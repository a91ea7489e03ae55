/**
 * The chat page's HTML and CSS. Static: no value is put into the markup on the
 * server (the chat id, the messages and everything else are filled in by
 * `/chat/app.js` in the browser), and no inline script, so the dashboard's
 * Content-Security-Policy (`script-src 'self'`) holds unchanged. Laid out for
 * a phone first: one column, the input at the bottom.
 */

/** The page at `GET /chat`. */
export function chatPage(): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1,viewport-fit=cover">
<meta name="color-scheme" content="light dark">
<title>Chat · magpie</title>
<link rel="stylesheet" href="/chat/app.css">
<script type="module" src="/chat/app.js"></script>
</head>
<body>
<header><b>magpie</b><span id="chat-name" class="muted"></span><span id="status" class="muted" role="status">connecting…</span><a href="/">Dashboard</a></header>
<main id="log" role="log" aria-live="polite" aria-label="Conversation"></main>
<form id="composer" autocomplete="off">
<textarea id="input" rows="1" placeholder="Message magpie (Enter sends, Shift+Enter new line; /new, /stop)" aria-label="Message" autofocus></textarea>
<button id="mic" type="button" hidden aria-label="Record a voice message" title="Record a voice message">🎤</button>
<button id="send" type="submit">Send</button>
</form>
</body>
</html>`;
}

/** `GET /chat/app.css`. */
export const PAGE_STYLE = `
:root{--bg:#f5f6f8;--fg:#1d2330;--muted:#7a8294;--me:#dbe8ff;--bot:#fff;--line:#e2e5eb;--code:#eef1f6;--err:#c62828}
@media (prefers-color-scheme:dark){:root{--bg:#15181e;--fg:#e4e7ee;--muted:#8b93a5;--me:#23395d;--bot:#1f242d;--line:#2c323d;--code:#2a303a;--err:#ff8a80}}
*{box-sizing:border-box}
html,body{height:100%}
body{margin:0;display:flex;flex-direction:column;height:100dvh;background:var(--bg);color:var(--fg);font:15px/1.5 system-ui,-apple-system,Segoe UI,sans-serif}
header{display:flex;gap:12px;align-items:baseline;padding:10px 16px;background:#1d2330;color:#fff;flex-wrap:wrap}
header b{font-size:17px}header a{margin-left:auto;color:#c9d3e6;text-decoration:none}header .muted{color:#aab3c5;font-size:13px}
#log{flex:1;overflow-y:auto;padding:12px max(12px,calc((100% - 820px)/2));display:flex;flex-direction:column;gap:8px}
.msg{max-width:min(680px,88%);padding:8px 12px;border-radius:12px;overflow-wrap:anywhere;box-shadow:0 1px 2px rgba(0,0,0,.08)}
.msg.user{align-self:flex-end;background:var(--me);white-space:pre-wrap}
.msg.assistant{align-self:flex-start;background:var(--bot);border:1px solid var(--line)}
.msg.live{border-style:dashed}.msg.error{color:var(--err)}.msg.typing{color:var(--muted);letter-spacing:2px}
.msg.failed{opacity:.7;outline:1px solid var(--err)}
.msg .note{display:block;font-size:12px;color:var(--muted);margin-top:4px;white-space:normal}
.msg .note.err{color:var(--err)}
.msg .actions{display:flex;flex-wrap:wrap;gap:6px;margin-top:8px}
.msg .actions button{padding:4px 12px;border:1px solid var(--line);border-radius:8px;background:var(--bg);color:var(--fg);font:inherit;cursor:pointer}
.msg .actions button:hover:not(:disabled){border-color:#2f6fdd}
.msg .actions button:disabled{opacity:.5;cursor:default}
.msg p{margin:0 0 6px}.msg p:last-child{margin-bottom:0}.msg p.heading{font-weight:700}
.msg pre{margin:6px 0;padding:8px;background:var(--code);border-radius:6px;overflow-x:auto;white-space:pre}
.msg code{font:13px/1.4 ui-monospace,Menlo,Consolas,monospace;background:var(--code);padding:1px 4px;border-radius:4px}
.msg pre code{padding:0;background:none}
.msg a{color:#2f6fdd}
.empty{color:var(--muted);text-align:center;margin:auto}
.muted{color:var(--muted)}
#composer{display:flex;gap:8px;padding:10px max(12px,calc((100% - 820px)/2));padding-bottom:max(10px,env(safe-area-inset-bottom));border-top:1px solid var(--line);background:var(--bg)}
#input{flex:1;resize:none;max-height:40vh;padding:9px 12px;border:1px solid var(--line);border-radius:10px;font:inherit;background:var(--bot);color:var(--fg)}
#send{padding:0 18px;border:0;border-radius:10px;background:#2f6fdd;color:#fff;font:inherit;cursor:pointer}
#mic{padding:0 12px;border:1px solid var(--line);border-radius:10px;background:var(--bot);color:var(--fg);font:inherit;cursor:pointer}
#mic.recording{background:var(--err);color:#fff;border-color:var(--err)}
.msg audio{display:block;width:min(320px,100%);margin-top:4px}
@media (max-width:560px){.msg{max-width:94%}header{padding:8px 12px}}
`;
