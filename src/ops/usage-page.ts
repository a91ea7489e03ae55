/**
 * The dashboard's usage page: cost and tokens per day stacked by chat or by
 * model, the cached share of prompt tokens, and model calls per hour, drawn
 * in the browser by uPlot (served by the dashboard from node_modules, no CDN)
 * from `/api/usage` (usage-charts.ts). Labels reach the page through uPlot's
 * legend (textContent) and canvas text only, never as HTML. Each chart's
 * legend reads today's figures (the calls chart: the latest hour with calls)
 * until the pointer picks another day or hour.
 */
import { type AgentNav, page } from './dashboard-pages.js';

/** Where the server serves the page's own script, uPlot's script and uPlot's stylesheet. */
export const USAGE_ASSETS = {
  script: '/assets/usage.js',
  uplot: '/assets/uplot.js',
  uplotCss: '/assets/uplot.css',
} as const;

/** The usage page of the agent `nav` shows (empty charts until its script has fetched `/api/usage`). */
export function usagePage(nav?: AgentNav): string {
  const chart = (id: string, title: string) =>
    `<section class="wide chart"><h2>${title}</h2><div id="${id}" data-chart="${id}"></div><p class="muted note" id="${id}-note"></p></section>`;
  const body = `<main>
<section class="wide"><h2>Usage</h2><p id="usage-summary" class="muted">loading…</p>
<label>stack by <select id="stack-by"><option value="chat">chat</option><option value="model">model</option></select></label>
<label>days <select id="days"><option>7</option><option selected>14</option><option>30</option><option>62</option></select></label>
<p id="usage-empty" class="muted" hidden>no usage yet: the charts appear once a model call has been counted</p></section>
${chart('cost-chart', 'Cost per day')}
${chart('tokens-chart', 'Tokens per day')}
${chart('cached-chart', 'Cached share of prompt tokens')}
${chart('calls-chart', 'Model calls per hour')}
</main>`;
  return page('Usage', body, [USAGE_ASSETS.uplot, USAGE_ASSETS.script], [USAGE_ASSETS.uplotCss], nav);
}

/**
 * The page's browser code. Stacked bars: series k is drawn at the sum of the
 * first k+1 series, tallest first, so each bar shows every part in its own
 * colour; the legend reads each part's own figure. The agent is the page's own `?agent=`.
 */
export const USAGE_SCRIPT = `
'use strict';
const agent=new URLSearchParams(location.search).get('agent');
const COLOURS=['#3b82f6','#f59e0b','#10b981','#ef4444','#8b5cf6','#06b6d4','#ec4899','#84cc16'];
const money=c=>c==null?'–':(c>=0.01||c===0?c.toFixed(2):c.toPrecision(3).replace(/0+$/,''));
const count=v=>v==null?'–':Math.round(v).toLocaleString('en-US');
const pct=v=>v==null?'–':v+' %';
let charts=[];let data;
function widthOf(el){return Math.max(320,el.parentElement.clientWidth-32);}
function note(id,text){document.getElementById(id+'-note').textContent=text||'';}
function axisX(labels,every){const ticks=labels.map((_,i)=>i).filter(i=>i%every===0);
 return {splits:()=>ticks,values:(u,s)=>s.map(i=>labels[i]==null?'':labels[i].slice(5,10)),grid:{show:false}};}
function draw(id,labels,series,fmt,opts){
 const el=document.getElementById(id);const x=labels.map((_,i)=>i);const last=labels.length-1;const shown=opts.idx==null?last:opts.idx;
 const u=new uPlot({width:widthOf(el),height:opts.height||220,
  scales:{x:{time:false,range:[-0.6,last+0.6]},y:{range:(u,min,max)=>[0,max>0?max*1.1:1]}},
  axes:[axisX(labels,opts.every||Math.max(1,Math.ceil(labels.length/14))),{size:64,values:(u,s)=>s.map(fmt)}],
  cursor:{drag:{x:false,y:false}},
  series:[{label:opts.xLabel||'day',value:(u,i)=>i==null?'–':labels[i]},...series],
  hooks:{setCursor:[u=>{if(u.cursor.idx==null)u.setLegend({idx:shown});}]},
 },[x,...series.map(s=>s.data)],el);
 u.setLegend({idx:shown});el.dataset.drawn='true';charts.push(u);return u;}
function bars(){return uPlot.paths.bars({size:[0.7,64],align:0});}
function stacked(id,labels,parts,fmt,limit){
 let sum=labels.map(()=>0);const drawn=parts.map((p,i)=>{sum=sum.map((v,j)=>v+p.values[j]);
  return {label:p.label,data:sum,fill:COLOURS[i%8],stroke:COLOURS[i%8],width:0,paths:bars(),points:{show:false},
   value:(u,v,si,idx)=>idx==null?'–':fmt(p.values[idx])};}).reverse();
 if(limit!=null)drawn.push({label:limit.label,data:labels.map(()=>limit.value),stroke:'#c62828',dash:[6,4],width:1.5,points:{show:false},value:()=>fmt(limit.value)});
 draw(id,labels,drawn,fmt,{});}
function render(){
 for(const u of charts)u.destroy();charts=[];
 const by=document.getElementById('stack-by').value==='model'?'byModel':'byChat';
 const d=data;document.getElementById('usage-empty').hidden=d.any;
 for(const s of document.querySelectorAll('section.chart'))s.hidden=!d.any;
 document.getElementById('usage-summary').textContent='Days in '+d.timezone+', today '+d.date+'. Settled model calls (MAGPIE_PRICES / MAGPIE_PRICE_* for costs).';
 if(!d.any)return;
 const L=d.limits;
 const cost=d.cost[by];
 if(cost.length===0)note('cost-chart','no cost recorded: the models that answered have no price (MAGPIE_PRICES)');else note('cost-chart','');
 stacked('cost-chart',d.days,cost,money,L.daily!=null?{label:'daily limit',value:L.daily}:null);
 stacked('tokens-chart',d.days,d.tokens[by],count,L.dailyTokens!=null?{label:'daily token limit',value:L.dailyTokens}:null);
 draw('cached-chart',d.days,[{label:'cached share',data:d.cachedShare,stroke:'#1a7f37',width:2,fill:'rgba(26,127,55,.08)',value:(u,v)=>pct(v),spanGaps:false}],v=>v+' %',{height:180});
 draw('calls-chart',d.hours,[{label:'model calls',data:d.calls,fill:'#3b82f6',stroke:'#3b82f6',width:0,paths:bars(),points:{show:false},value:(u,v)=>count(v)}],count,{height:180,every:24,xLabel:'hour',idx:Math.max(0,d.calls.findLastIndex(n=>n>0))});
 note('calls-chart','at most '+L.maxCallsPerMinute+' model calls a minute per chat (MAGPIE_MAX_CALLS_PER_MINUTE)');}
async function load(){try{const days=document.getElementById('days').value;
 const r=await fetch('/api/usage?days='+encodeURIComponent(days)+(agent?'&agent='+encodeURIComponent(agent):''),{credentials:'same-origin'});if(!r.ok)return;
 data=await r.json();render();document.body.dataset.usageLoaded='true';}catch(e){console.warn(e);}}
document.getElementById('stack-by').addEventListener('change',()=>{if(data)render();});
document.getElementById('days').addEventListener('change',load);
let resize;window.addEventListener('resize',()=>{clearTimeout(resize);resize=setTimeout(()=>{if(data)render();},200);});
load();setInterval(load,60000);
`;
