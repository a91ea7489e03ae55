/**
 * The chat page's script, served as the ES module `/chat/app.js`: picks the
 * chat (the `?name=` one, else this browser's random id kept in
 * localStorage), shows the conversation so far (`/chat/history`), follows the
 * chat's event stream (`/chat/events`, resumed by the browser after the last
 * kept event it received) and posts what the user types (`/chat/messages`,
 * Enter sends, Shift+Enter a new line). The bot's texts go through
 * `/chat/render.js` (escaped, then formatted); the user's own texts and every
 * other string are set with textContent only. A message's actions are
 * buttons under it: a click posts the command as if typed, under the id
 * `press-<message id>` — one per message, so the chat takes one press of a
 * question whichever tab it comes from — and disables that message's
 * buttons, here and (when the press comes back as a user event) in the
 * chat's other tabs. A spoken reply is an `<audio controls>` player loading
 * `/chat/audio`. The microphone button (shown where MediaRecorder exists)
 * records Opus (WebM, else OGG) until pressed again or MAX_RECORD_MS, and
 * posts the bytes to `/chat/voice`; a refusal (too large, too long) is a line
 * under the user's bubble.
 */

/** The source of `/chat/app.js`. */
export const APP_SCRIPT = String.raw`// magpie chat page
import { renderMarkdown } from '/chat/render.js';

const ID = /^[A-Za-z0-9_-]{1,64}$/;
const log = document.getElementById('log');
const input = document.getElementById('input');
const form = document.getElementById('composer');
const statusLine = document.getElementById('status');
const shown = new Set();
const lives = new Map();
const done = new Set();
const buttonRows = new Map();
let typing = null;
let dupes = new Set();
let chat = null;
const mic = document.getElementById('mic');
const MAX_RECORD_MS = 110000;
let recorder = null;

function randomId() {
  if (crypto.randomUUID) return crypto.randomUUID();
  return Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, '0')).join('');
}

function pickChat() {
  const name = new URLSearchParams(location.search).get('name');
  if (name !== null) return ID.test(name) ? name : null;
  let id = localStorage.getItem('magpie-chat-id');
  if (!id || !ID.test(id)) {
    id = randomId();
    localStorage.setItem('magpie-chat-id', id);
  }
  return id;
}

function setStatus(text) {
  statusLine.textContent = text;
}

function nearBottom() {
  return log.scrollHeight - log.scrollTop - log.clientHeight < 80;
}

function place(el) {
  const follow = nearBottom();
  log.querySelector('.empty')?.remove();
  if (typing && typing !== el && typing.isConnected) log.insertBefore(el, typing);
  else log.appendChild(el);
  if (follow) log.scrollTop = log.scrollHeight;
  return el;
}

function bubble(role, text, extra) {
  const el = document.createElement('div');
  el.className = 'msg ' + role + (extra ? ' ' + extra : '');
  fill(el, role, text);
  return el;
}

function fill(el, role, text) {
  if (role === 'user') el.textContent = text;
  else el.innerHTML = renderMarkdown(text);
}

function note(el, text, cls) {
  let n = el.querySelector('.note');
  if (!n) {
    n = document.createElement('span');
    el.appendChild(n);
  }
  n.className = 'note' + (cls ? ' ' + cls : '');
  n.textContent = text;
}

/** The id a press on message messageId is sent under (a valid message id: at most 64 of A-Z a-z 0-9 _ -). */
function pressIdOf(messageId) {
  return ('press-' + String(messageId).replace(/[^A-Za-z0-9_-]/g, '_')).slice(0, 64);
}

function disableButtons(pressId) {
  const row = buttonRows.get(pressId);
  if (!row) return;
  row.classList.add('pressed');
  for (const button of row.querySelectorAll('button')) button.disabled = true;
}

/** Buttons under el for the message's actions, unless the message was answered already. */
function addButtons(el, ev) {
  if (!Array.isArray(ev.actions) || ev.actions.length === 0) return;
  const pressId = pressIdOf(ev.id);
  const row = document.createElement('div');
  row.className = 'actions';
  for (const action of ev.actions) {
    const button = document.createElement('button');
    button.type = 'button';
    button.textContent = action.label;
    button.title = action.command;
    button.addEventListener('click', async () => {
      disableButtons(pressId);
      if (!(await send(chat, action.command, pressId))) {
        row.classList.remove('pressed');
        for (const b of row.querySelectorAll('button')) b.disabled = false;
      }
    });
    row.appendChild(button);
  }
  el.appendChild(row);
  buttonRows.set(pressId, row);
  if (shown.has(pressId)) disableButtons(pressId);
}

/** An <audio controls> player of the spoken reply ev under el. */
function addPlayer(el, ev) {
  const audio = document.createElement('audio');
  audio.controls = true;
  audio.preload = 'metadata';
  audio.src = '/chat/audio?chat=' + encodeURIComponent(chat) + '&id=' + encodeURIComponent(ev.id);
  audio.setAttribute('aria-label', 'spoken reply, ' + Math.round(ev.audio.seconds) + ' s');
  el.classList.add('voice');
  el.appendChild(audio);
}

/** The recording type this browser makes: Opus in WebM, else in OGG; null without MediaRecorder. */
function recordingType() {
  if (!window.MediaRecorder || !navigator.mediaDevices?.getUserMedia) return null;
  for (const type of ['audio/webm;codecs=opus', 'audio/ogg;codecs=opus', 'audio/webm']) {
    if (MediaRecorder.isTypeSupported(type)) return type;
  }
  return null;
}

async function startRecording(type) {
  let stream;
  try {
    stream = await navigator.mediaDevices.getUserMedia({ audio: true });
  } catch (err) {
    setStatus('microphone not available: ' + String(err.message || err));
    return;
  }
  const chunks = [];
  const rec = new MediaRecorder(stream, { mimeType: type });
  rec.addEventListener('dataavailable', (e) => {
    if (e.data.size > 0) chunks.push(e.data);
  });
  rec.addEventListener('stop', () => {
    for (const track of stream.getTracks()) track.stop();
    mic.classList.remove('recording');
    mic.textContent = '\u{1F3A4}';
    clearTimeout(rec.limit);
    recorder = null;
    const blob = new Blob(chunks, { type: type.split(';')[0] });
    if (blob.size > 0) sendVoice(blob);
    else setStatus('nothing was recorded');
  });
  rec.start();
  rec.limit = setTimeout(() => rec.state !== 'inactive' && rec.stop(), MAX_RECORD_MS);
  recorder = rec;
  mic.classList.add('recording');
  mic.textContent = '\u25A0';
  mic.setAttribute('aria-label', 'Stop recording and send');
}

/** Posts a recording as a voice message; a refusal is a line under its bubble. */
async function sendVoice(blob) {
  const id = randomId();
  shown.add(id);
  const el = place(bubble('user', '\u{1F3A4} voice message'));
  mic.setAttribute('aria-label', 'Record a voice message');
  try {
    const res = await fetch('/chat/voice?chat=' + encodeURIComponent(chat) + '&id=' + encodeURIComponent(id), {
      method: 'POST',
      headers: { 'Content-Type': blob.type },
      credentials: 'same-origin',
      body: blob,
    });
    if (res.ok) return;
    el.classList.add('failed');
    note(el, 'not sent: ' + (await res.text()).replace(/^magpie chat: /, ''), 'err');
  } catch (err) {
    el.classList.add('failed');
    note(el, 'not sent: the server is not answering', 'err');
  }
}

function setupMic() {
  const type = recordingType();
  if (!type) return;
  mic.hidden = false;
  mic.addEventListener('click', () => {
    if (recorder) recorder.stop();
    else startRecording(type);
  });
}

function setTyping(active) {
  if (active && !typing) {
    typing = bubble('assistant', '', 'typing');
    typing.textContent = '\u2026';
    typing.setAttribute('aria-label', 'magpie is writing');
    place(typing);
  } else if (!active && typing) {
    typing.remove();
    typing = null;
  }
}

function onMessage(ev) {
  if (shown.has(ev.id)) return;
  shown.add(ev.id);
  if (dupes.delete('assistant\n' + ev.text)) return;
  const follow = nearBottom();
  const live = ev.live ? lives.get(ev.live) : undefined;
  if (ev.live) done.add(ev.live);
  if (live) {
    lives.delete(ev.live);
    live.className = 'msg assistant' + (ev.kind === 'error' ? ' error' : '');
    fill(live, 'assistant', ev.text);
    addButtons(live, ev);
    if (follow) log.scrollTop = log.scrollHeight;
  } else {
    const el = bubble('assistant', ev.text, ev.kind === 'error' ? 'error' : '');
    addButtons(el, ev);
    if (ev.audio) addPlayer(el, ev);
    place(el);
  }
  if (ev.kind !== 'message') setTyping(false);
}

function onLive(ev) {
  if (done.has(ev.turn)) return;
  let el = lives.get(ev.turn);
  setTyping(false);
  if (!el) {
    el = bubble('assistant', '', 'live');
    lives.set(ev.turn, el);
    place(el);
  }
  const follow = nearBottom();
  fill(el, 'assistant', ev.text);
  if (ev.progress) note(el, ev.progress);
  if (follow) log.scrollTop = log.scrollHeight;
}

function onUser(ev) {
  if (shown.has(ev.id)) return;
  shown.add(ev.id);
  disableButtons(ev.id);
  if (dupes.delete('user\n' + ev.text)) return;
  place(bubble('user', ev.text));
}

function listen(chat, cursor) {
  const url = '/chat/events?chat=' + encodeURIComponent(chat) + (cursor ? '&after=' + encodeURIComponent(cursor) : '');
  const source = new EventSource(url);
  const handle = (fn) => (e) => {
    try {
      fn(JSON.parse(e.data));
    } catch (err) {
      console.warn('magpie chat: event skipped', err);
    }
  };
  source.addEventListener('message', handle(onMessage));
  source.addEventListener('user', handle(onUser));
  source.addEventListener('live', handle(onLive));
  source.addEventListener('typing', handle((ev) => setTyping(ev.active)));
  source.addEventListener('ready', () => {
    dupes = new Set();
    setStatus('connected');
  });
  source.onerror = () => {
    if (source.readyState === EventSource.CLOSED) setStatus('disconnected: reload the page (signed out?)');
    else setStatus('reconnecting\u2026');
  };
}

/** Posts text as the user's message under id; resolves true when the server took it. */
async function send(chat, text, id = randomId()) {
  shown.add(id);
  dupes = new Set();
  const el = place(bubble('user', text));
  try {
    const res = await fetch('/chat/messages', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      credentials: 'same-origin',
      body: JSON.stringify({ chat, text, id }),
    });
    if (res.ok) return true;
    el.classList.add('failed');
    note(el, 'not sent: ' + (await res.text()).replace(/^magpie chat: /, ''), 'err');
  } catch (err) {
    el.classList.add('failed');
    note(el, 'not sent: the server is not answering', 'err');
  }
  return false;
}

async function start() {
  chat = pickChat();
  if (!chat) {
    setStatus('bad chat name: use 1-64 letters, digits, _ or -');
    form.hidden = true;
    return;
  }
  document.getElementById('chat-name').textContent = new URLSearchParams(location.search).has('name') ? chat : '';
  let cursor = null;
  try {
    const res = await fetch('/chat/history?chat=' + encodeURIComponent(chat), { credentials: 'same-origin' });
    if (!res.ok) throw new Error(await res.text());
    const history = await res.json();
    cursor = history.cursor;
    for (const line of history.messages) place(bubble(line.role, line.text));
    const last = (role) => history.messages.filter((m) => m.role === role).at(-1);
    for (const role of ['user', 'assistant']) if (last(role)) dupes.add(role + '\n' + last(role).text);
    if (history.messages.length === 0) {
      const empty = document.createElement('p');
      empty.className = 'empty';
      empty.textContent = 'Say something to magpie.';
      log.appendChild(empty);
    }
  } catch (err) {
    setStatus('history not loaded: ' + String(err.message || err));
  }
  log.scrollTop = log.scrollHeight;
  listen(chat, cursor);
  setupMic();
  input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      form.requestSubmit();
    }
  });
  input.addEventListener('input', () => {
    input.style.height = 'auto';
    input.style.height = Math.min(input.scrollHeight, window.innerHeight * 0.4) + 'px';
  });
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const text = input.value;
    if (!text.trim()) return;
    input.value = '';
    input.style.height = 'auto';
    send(chat, text);
  });
}

start();
`;
