/**
 * The dashboard's own HTML pages. Server-rendered pages escape every value
 * with `escapeHtml`; the live overview fills itself in the browser from
 * `/api/overview` using textContent only, so nothing from a chat is ever
 * parsed as HTML. With several agents (agents.json) every page shows one
 * agent's figures, named by `?agent=ID` (main when absent); the header's
 * switcher and the pages' links keep it.
 */
import type { SessionEntry, SessionInfo } from '../sessions/types.js';

/** The agents a page can switch between and the one it shows. */
export interface AgentNav {
  /** The agent shown. */
  current: string;
  /** Every agent, main first (the switcher appears when there are two or more). */
  agents: ReadonlyArray<{ id: string; name?: string }>;
  /** Where the switcher's links lead (the page's path without the query). */
  path: string;
}

/** The agent the dashboard shows when the URL names none. */
const DEFAULT_AGENT = 'main';

/** `href` for the agent `nav` shows: `?agent=ID` added unless it is main. */
export function agentHref(href: string, nav: AgentNav | undefined): string {
  if (!nav || nav.current === DEFAULT_AGENT) return href;
  return `${href}${href.includes('?') ? '&' : '?'}agent=${encodeURIComponent(nav.current)}`;
}

/** The header's agent switcher: a link per agent, the one shown marked; nothing with one agent. */
function agentSwitcher(nav: AgentNav | undefined): string {
  if (!nav || nav.agents.length < 2) return '';
  const links = nav.agents
    .map((a) => {
      const label = a.name && a.name !== a.id ? `${a.name} (${a.id})` : a.id;
      const current = a.id === nav.current ? ' class="current" aria-current="page"' : '';
      return `<a href="${escapeHtml(`${nav.path}?agent=${encodeURIComponent(a.id)}`)}"${current}>${escapeHtml(label)}</a>`;
    })
    .join('');
  return `<nav class="agents" aria-label="agent"><span>agent</span>${links}</nav>`;
}

/** Escapes text for HTML content and attribute values. */
export function escapeHtml(text: string): string {
  return text
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&#39;');
}

const STYLE = `
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;margin:0;background:#f5f6f8;color:#1d2330}
header{background:#1d2330;color:#fff;padding:10px 24px;display:flex;gap:24px;align-items:center}
header b{font-size:17px;letter-spacing:.3px}header a{color:#c9d3e6;text-decoration:none}header a:hover{color:#fff}
nav.agents{margin-left:auto;display:flex;gap:12px;align-items:center}nav.agents span{color:#7a8294}nav.agents a.current{color:#fff;font-weight:600;border-bottom:2px solid #fff}
main{padding:16px 24px;display:grid;grid-template-columns:repeat(auto-fit,minmax(420px,1fr));gap:16px}
section{background:#fff;border-radius:8px;box-shadow:0 1px 3px rgba(0,0,0,.08);padding:12px 16px;overflow:auto}
section.wide{grid-column:1/-1}h2{font-size:15px;margin:0 0 8px}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:4px 8px;border-bottom:1px solid #eceef2;white-space:nowrap}
th{color:#5b6477;font-weight:600;font-size:12px;text-transform:uppercase}td.num{text-align:right;font-variant-numeric:tabular-nums}
.ok{color:#1a7f37}.error,.fail{color:#c62828}.muted{color:#7a8294}.pill{padding:1px 8px;border-radius:10px;background:#eef1f6}
pre{white-space:pre-wrap;word-break:break-word;margin:0;font:13px/1.4 ui-monospace,Menlo,monospace}
label{margin-right:16px}.note{margin:4px 0 0;font-size:12px}.u-legend th{text-transform:none;font-size:13px;color:#1d2330}
.msg{border-left:3px solid #c9d3e6;padding:4px 10px;margin:8px 0}.msg.user{border-color:#3b82f6}.msg.assistant{border-color:#1a7f37}.msg.tool{border-color:#9aa3b5}
`;

/**
 * The page frame: header with navigation, then `body`, then the page's
 * scripts loaded from `scripts` in order (the Content-Security-Policy allows
 * no inline script), with the stylesheets `styles` in the head. With `nav`,
 * the header's links keep its agent and it has the agent switcher.
 */
export function page(
  title: string,
  body: string,
  scripts: string | readonly string[] = [],
  styles: readonly string[] = [],
  nav?: AgentNav,
): string {
  const tags = (typeof scripts === 'string' ? [scripts] : scripts)
    .map((src) => `<script src="${escapeHtml(src)}"></script>`)
    .join('');
  const links = styles.map((href) => `<link rel="stylesheet" href="${escapeHtml(href)}">`).join('');
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)} · magpie</title>
<meta name="viewport" content="width=device-width,initial-scale=1">${links}<style>${STYLE}</style></head>
<body><header><b>magpie</b><a href="${escapeHtml(agentHref('/', nav))}">Overview</a><a href="${escapeHtml(agentHref('/usage', nav))}">Usage</a><a href="/queues">Queues</a><a href="${escapeHtml(agentHref('/turns', nav))}">Turns</a><a href="${escapeHtml(agentHref('/sessions', nav))}">Sessions</a><a href="/metrics">Metrics</a><a href="/chat">Chat</a>${agentSwitcher(nav)}</header>
${body}${tags}</body></html>`;
}

/** The live overview: workers, queues, running turns, the budget, token use, recent turns, schedules (polls every 2 s). */
export function overviewPage(nav?: AgentNav): string {
  const body = `<main>
<section><h2>Workers</h2><table id="workers"><thead><tr><th>id</th><th>pid</th><th>host</th><th>concurrency</th></tr></thead><tbody></tbody></table></section>
<section><h2>Queues</h2><table id="queues"><thead><tr><th>queue</th><th>waiting</th><th>active</th><th>delayed</th><th>failed</th></tr></thead><tbody></tbody></table></section>
<section class="wide"><h2>Running turns</h2><table id="running"><thead><tr><th>session</th><th>for</th><th>iteration</th><th>worker</th></tr></thead><tbody></tbody></table></section>
<section class="wide"><h2>Approvals waiting</h2><table id="approvals"><thead><tr><th>code</th><th>chat</th><th>state</th><th>asks to</th><th>expires</th></tr></thead><tbody></tbody></table></section>
<section class="wide"><h2>Budget</h2><pre id="budget" class="muted"></pre></section>
<section class="wide"><h2>Tokens</h2><table id="usage"><thead><tr><th>what</th><th>tokens in</th><th>cached</th><th>cached %</th><th>tokens out</th><th>turns</th><th>cost</th></tr></thead><tbody></tbody></table></section>
<section class="wide"><h2>Models</h2><table id="models"><thead><tr><th>model or endpoint</th><th>calls (recent turns)</th><th>state</th></tr></thead><tbody></tbody></table></section>
<section class="wide"><h2>Recent turns</h2><table id="turns"><thead><tr><th>ended</th><th>session</th><th>outcome</th><th>model</th><th>wall</th><th>LLM calls</th><th>tokens in</th><th>cached</th><th>tokens out</th><th>cost</th><th>tools</th></tr></thead><tbody></tbody></table></section>
<section><h2>Schedules</h2><table id="schedules"><thead><tr><th>what</th><th>when</th><th>next run</th></tr></thead><tbody></tbody></table></section>
<section><h2>Errors</h2><table id="errors"><thead><tr><th>at</th><th>where</th><th>message</th></tr></thead><tbody></tbody></table></section>
</main>`;
  return page('Overview', body, OVERVIEW_SCRIPT_PATH, [], nav);
}

/** Where the server serves {@link OVERVIEW_SCRIPT}. */
export const OVERVIEW_SCRIPT_PATH = '/assets/overview.js';

/**
 * The overview's browser code: builds rows with textContent only (no innerHTML of data); reads
 * the agent of the page's own `?agent=`.
 */
export const OVERVIEW_SCRIPT = `
const agent=new URLSearchParams(location.search).get('agent');
function row(cells){const tr=document.createElement('tr');for(const c of cells){const td=document.createElement('td');
const v=typeof c==='object'&&c!==null?c:{text:c};td.textContent=v.text==null?'':String(v.text);if(v.cls)td.className=v.cls;tr.appendChild(td);}return tr;}
function fill(id,rows,empty){const tb=document.querySelector('#'+id+' tbody');tb.replaceChildren(...rows);
if(rows.length===0){const r=row([{text:empty,cls:'muted'}]);r.firstChild.colSpan=12;tb.appendChild(r);}}
function t(iso){return iso?new Date(iso).toLocaleTimeString():'now';}
function n(x){return {text:x,cls:'num'};}
function cost(p,f){if(!p)return n('–');const c=Math.min(f.cachedTokens||0,f.promptTokens);
return n((((f.promptTokens-c)*p.input+c*p.cachedInput+f.completionTokens*p.output)/1e6).toPrecision(3));}
function pct(f){return n(f.promptTokens?Math.round(100*(f.cachedTokens||0)/f.promptTokens)+' %':'–');}
function usageRow(what,f,p){return row([what,n(f.promptTokens),n(f.cachedTokens||0),pct(f),n(f.completionTokens),n(f.turns),cost(p,f)]);}
async function tick(){try{const r=await fetch('/api/overview'+(agent?'?agent='+encodeURIComponent(agent):''),{credentials:'same-origin'});if(!r.ok)return;const d=await r.json();
fill('workers',d.status.workers.map(w=>row([w.id,n(w.pid),w.host,n(w.concurrency)])),'no worker alive');
fill('queues',d.status.queues.map(q=>row([q.name,n(q.waiting),n(q.active),n(q.delayed),{text:q.failed,cls:q.failed?'num fail':'num'}])),'no queues');
fill('running',d.status.running.map(x=>row([x.session,x.seconds+' s',n(x.iteration),x.worker])),'no turn running');
fill('approvals',d.status.approvals.map(x=>row([x.code,x.chat,x.state,x.summary,x.expiresAt])),'no question waiting');
document.getElementById('budget').textContent=(d.budgetLines||[]).join('\\n')||'not kept here';
const u=d.status.usage,p=u.prices;
fill('usage',[usageRow('today ('+u.date+')',u.today,p),usageRow('since the start',u.total,p),...u.sessions.map(s=>usageRow(s.session+' (today)',s.today,p))],'no turns yet');
const m=d.status.models;fill('models',[...m.recent.map(u=>row([u.model,n(u.calls),'answering'])),
 ...m.resting.map(r=>row([r.label,n('–'),{text:(r.leftMs>0?'rests '+Math.ceil(r.leftMs/1000)+' s more':'being tried again')+' after '+r.failures+' failure(s): '+r.reason,cls:'fail'}]))],'no model calls recorded');
fill('turns',d.turns.map(x=>row([new Date(x.at).toLocaleTimeString(),x.session,{text:x.outcome,cls:x.outcome==='ok'?'ok':(x.outcome==='error'?'error':'')},
 x.model?x.model+(x.fallbacks?' (fallback)':''):'–',n((x.wallMs/1000).toFixed(2)+' s'),n(x.llmCalls),n(x.promptTokens),n(x.cachedTokens||0),n(x.completionTokens),cost(p,x),
 x.toolCalls.map(c=>c.name+' '+c.ms+'ms'+(c.ok?'':' ✗')).join(', ')||'–'])),'no turns yet');
const s=d.status.schedules;const rows=[];if(s.heartbeat)rows.push(row(['heartbeat',s.heartbeat.everyMs?'every '+Math.round(s.heartbeat.everyMs/60000)+' min':'',t(s.heartbeat.next)]));
for(const k of s.tasks)rows.push(row([k.id+' → '+k.session+(k.mode==='agent'?' [AGENT: full turn with tools]':'')+': '+k.message,k.schedule,t(k.next)]));
const b=d.status.backup;if(b)rows.push(row(['last backup: '+b.file,n(b.bytes+' bytes'),t(b.at)]));fill('schedules',rows,'heartbeat off, no tasks');
fill('errors',d.status.errors.map(e=>row([t(e.at),e.source,e.message])),'none');
}catch(e){console.warn(e);}}
tick();setInterval(tick,2000);
`;

/** The sessions list, newest first. */
export function sessionsPage(sessions: SessionInfo[], nav?: AgentNav): string {
  const rows = sessions
    .map(
      (s) =>
        `<tr><td><a href="${escapeHtml(agentHref(`/sessions/${encodeURIComponent(s.key)}`, nav))}">${escapeHtml(s.key)}</a></td><td>${escapeHtml(s.updatedAt.toISOString())}</td><td class="num">${s.messages}</td><td class="num">${(s.bytes / 1024).toFixed(1)} KiB</td></tr>`,
    )
    .join('');
  return page(
    'Sessions',
    `<main><section class="wide"><h2>Sessions (${sessions.length})</h2><table><thead><tr><th>session</th><th>last activity</th><th>messages</th><th>size</th></tr></thead><tbody>${rows || '<tr><td class="muted">no sessions yet</td></tr>'}</tbody></table></section></main>`,
    [],
    [],
    nav,
  );
}

/** One session's transcript; every message's text escaped. */
export function transcriptPage(key: string, entries: SessionEntry[], nav?: AgentNav): string {
  const items = entries
    .map((e) => {
      const text = contentText(e);
      const calls =
        e.role === 'assistant' && e.toolCalls?.length
          ? `<pre class="muted">${escapeHtml(e.toolCalls.map((c) => `→ ${c.name}(${c.arguments})`).join('\n'))}</pre>`
          : '';
      const who = e.role === 'tool' ? `tool ${e.name ?? ''}` : e.role;
      return `<div class="msg ${escapeHtml(e.role)}"><div class="muted">${escapeHtml(who)}${e.ts ? ` · ${escapeHtml(e.ts)}` : ''}</div><pre>${escapeHtml(text)}</pre>${calls}</div>`;
    })
    .join('');
  return page(
    key,
    `<main><section class="wide"><h2>${escapeHtml(key)} <span class="pill">${entries.length} messages</span></h2>${items || '<p class="muted">empty</p>'}</section></main>`,
    [],
    [],
    nav,
  );
}

function contentText(e: SessionEntry): string {
  if (typeof e.content === 'string') return e.content;
  if (e.content === null) return '';
  return e.content.map((p) => (p.type === 'text' ? p.text : `[${p.type}]`)).join('\n');
}
