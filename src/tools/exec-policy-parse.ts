/**
 * A small POSIX-sh reader for exec's deny list: splits a command line into
 * simple commands (at `;`, `&`, `|`, `&&`, `||`, newlines and parentheses),
 * each into words with quoting and escapes removed (`r''m`, `"rm"`, `\rm`,
 * `$'\x72m'` all read `rm`) and variables expanded where an earlier
 * assignment in the same line gives their value (`x=rm; $x -rf`), plus the
 * redirections, here-documents and command substitutions. It reads; it never
 * runs anything. What it cannot know (an unknown variable, `$(…)`) is marked
 * dynamic so the rules can judge it cautiously.
 */

/** One word of a command. */
export interface ShellWord {
  /** The text after quote removal and expansion of known variables. */
  text: string;
  /** The word as written. */
  raw: string;
  /** Holds an expansion whose value is unknown ($var, $(…), `…`, $((…))). */
  dynamic: boolean;
}

/** A redirection: its operator (`>`, `>>`, `<`, `&>`…) and its target. */
export interface ShellRedirect {
  op: string;
  target: ShellWord;
}

/** One simple command. */
export interface ShellCommand {
  words: ShellWord[];
  redirects: ShellRedirect[];
  /** Bodies of the here-documents (`<<EOF`) and here-strings (`<<<`) it reads. */
  input: string[];
  /** The command whose output this one reads through a pipe. */
  pipedFrom?: ShellCommand;
}

/** A parsed command line: its simple commands in order, and the text of each command substitution. */
export interface ParsedShell {
  commands: ShellCommand[];
  substitutions: string[];
}

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const ASSIGNMENT = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/s;
const DECLARERS = new Set(['export', 'local', 'readonly', 'declare', 'typeset']);

/** Decodes bash's `$'…'` escapes: \n \t \\ \' \" \xHH \NNN \uHHHH. */
function ansiC(body: string): string {
  return body.replace(
    /\\(x[0-9a-fA-F]{1,2}|u[0-9a-fA-F]{1,4}|U[0-9a-fA-F]{1,8}|[0-7]{1,3}|.)/gs,
    (_m, e: string) => {
      if (/^[xuU]/.test(e)) return String.fromCodePoint(Number.parseInt(e.slice(1), 16));
      if (/^[0-7]/.test(e)) return String.fromCharCode(Number.parseInt(e, 8));
      const simple: Record<string, string> = {
        n: '\n',
        t: '\t',
        r: '\r',
        a: '\x07',
        b: '\b',
        e: '\x1b',
        f: '\f',
        v: '\v',
      };
      return simple[e] ?? e;
    },
  );
}

/** Index just past the `close` matching the `open` at `start`, skipping quoted text; text.length when unclosed. */
function matching(text: string, start: number, open: string, close: string): number {
  let depth = 0;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (c === '\\') i++;
    else if (c === "'") i = text.indexOf("'", i + 1) < 0 ? text.length : text.indexOf("'", i + 1);
    else if (c === '"') {
      for (i++; i < text.length && text[i] !== '"'; i++) if (text[i] === '\\') i++;
    } else if (c === open) depth++;
    else if (c === close && --depth === 0) return i + 1;
  }
  return text.length;
}

/**
 * Parses `text`. `vars` holds the values of variables assigned earlier; the
 * assignments in `text` are added to it as they are met (an unknown value
 * removes the name).
 */
export function parseShell(text: string, vars: Map<string, string> = new Map()): ParsedShell {
  const commands: ShellCommand[] = [];
  const substitutions: string[] = [];
  let command: ShellCommand = { words: [], redirects: [], input: [] };
  let word: ShellWord | undefined;
  let wordStart = 0;
  let redirect: string | undefined;
  const heredocs: Array<{ delimiter: string; stripTabs: boolean; command: ShellCommand }> = [];

  const append = (s: string, dynamic = false) => {
    word ??= { text: '', raw: '', dynamic: false };
    word.text += s;
    if (dynamic) word.dynamic = true;
  };
  const endWord = (end: number) => {
    if (!word) return;
    word.raw = text.slice(wordStart, end);
    if (redirect !== undefined) {
      if (redirect === '<<' || redirect === '<<-') {
        heredocs.push({ delimiter: word.text, stripTabs: redirect === '<<-', command });
      } else if (redirect === '<<<') {
        command.input.push(word.text);
      } else if (!(/[<>]&$/.test(redirect) && /^(\d+|-)$/.test(word.text))) {
        command.redirects.push({ op: redirect, target: word });
      }
      redirect = undefined;
    } else {
      command.words.push(word);
    }
    word = undefined;
  };
  const endCommand = () => {
    if (command.words.length === 0 && command.redirects.length === 0 && command.input.length === 0) return;
    recordAssignments(command, vars);
    commands.push(command);
    command = { words: [], redirects: [], input: [] };
  };
  const expand = (i: number): number => {
    // text[i] === '$'
    const next = text[i + 1];
    if (next === "'") {
      const end = text.indexOf("'", i + 2);
      const stop = end < 0 ? text.length : end;
      append(ansiC(text.slice(i + 2, stop)));
      return stop + 1;
    }
    if (next === '(') {
      const end = matching(text, i + 1, '(', ')');
      const inner = text.slice(i + 2, end - 1);
      substitutions.push(inner.startsWith('(') ? inner.slice(1, -1) : inner);
      append(text.slice(i, end), true);
      return end;
    }
    if (next === '{') {
      const end = matching(text, i + 1, '{', '}');
      const name = text.slice(i + 2, end - 1);
      if (NAME.test(name) && vars.has(name)) append(vars.get(name) ?? '');
      else append(text.slice(i, end), true);
      return end;
    }
    const name = /^(?:[A-Za-z_][A-Za-z0-9_]*|[0-9?$!@*#-])/.exec(text.slice(i + 1))?.[0];
    if (!name) {
      append('$');
      return i + 1;
    }
    if (vars.has(name)) append(vars.get(name) ?? '');
    else append(`$${name}`, true);
    return i + 1 + name.length;
  };
  const backtick = (i: number): number => {
    let end = i + 1;
    while (end < text.length && text[end] !== '`') end += text[end] === '\\' ? 2 : 1;
    substitutions.push(text.slice(i + 1, end).replace(/\\([`\\$])/g, '$1'));
    append(text.slice(i, end + 1), true);
    return end + 1;
  };
  const start = (i: number) => {
    if (!word) wordStart = i;
  };

  let i = 0;
  while (i < text.length) {
    const c = text[i] as string;
    if (c === ' ' || c === '\t') {
      endWord(i);
      i++;
    } else if (c === '\n') {
      endWord(i);
      endCommand();
      i = readHeredocs(text, i + 1, heredocs);
    } else if (c === '#' && !word) {
      const end = text.indexOf('\n', i);
      i = end < 0 ? text.length : end;
    } else if (c === '\\') {
      start(i);
      if (text[i + 1] === '\n') i += 2;
      else {
        append(text[i + 1] ?? '');
        i += 2;
      }
    } else if (c === "'") {
      start(i);
      const end = text.indexOf("'", i + 1);
      const stop = end < 0 ? text.length : end;
      append(text.slice(i + 1, stop));
      i = stop + 1;
    } else if (c === '"') {
      start(i);
      append('');
      i++;
      while (i < text.length && text[i] !== '"') {
        const d = text[i] as string;
        if (d === '\\' && /[$`"\\\n]/.test(text[i + 1] ?? '')) {
          if (text[i + 1] !== '\n') append(text[i + 1] as string);
          i += 2;
        } else if (d === '$') i = expand(i);
        else if (d === '`') i = backtick(i);
        else {
          append(d);
          i++;
        }
      }
      i++;
    } else if (c === '$') {
      start(i);
      i = expand(i);
    } else if (c === '`') {
      start(i);
      i = backtick(i);
    } else if ((c === '<' || c === '>') && text[i + 1] === '(') {
      start(i);
      const end = matching(text, i + 1, '(', ')');
      substitutions.push(text.slice(i + 2, end - 1));
      append(text.slice(i, end), true);
      i = end;
    } else if (c === '<' || c === '>' || (c === '&' && text[i + 1] === '>')) {
      // A word of digits right before is the file descriptor (2>), not an argument.
      if (word && /^\d+$/.test(text.slice(wordStart, i))) word = undefined;
      else endWord(i);
      const op = /^(?:&>>|&>|<<<|<<-|<<|<>|<&|>>|>&|>\||[<>])/.exec(text.slice(i))?.[0] ?? c;
      redirect = op;
      i += op.length;
    } else if (c === ';' || c === '&' || c === '|' || c === '(' || c === ')') {
      endWord(i);
      endCommand();
      const op = /^(?:&&|\|\||;;|\|&|[;&|()])/.exec(text.slice(i))?.[0] ?? c;
      if (op === '|' || op === '|&') command.pipedFrom = commands[commands.length - 1];
      i += op.length;
    } else {
      start(i);
      append(c);
      i++;
    }
  }
  endWord(text.length);
  endCommand();
  return { commands, substitutions };
}

/** Reads the bodies of pending here-documents from `from`; returns the index after them. */
function readHeredocs(
  text: string,
  from: number,
  pending: Array<{ delimiter: string; stripTabs: boolean; command: ShellCommand }>,
): number {
  let i = from;
  while (pending.length > 0) {
    const doc = pending.shift() as (typeof pending)[number];
    const lines: string[] = [];
    while (i < text.length) {
      const end = text.indexOf('\n', i);
      const line = text.slice(i, end < 0 ? text.length : end);
      i = end < 0 ? text.length : end + 1;
      if ((doc.stripTabs ? line.replace(/^\t+/, '') : line) === doc.delimiter) break;
      lines.push(line);
    }
    doc.command.input.push(lines.join('\n'));
  }
  return i;
}

/** A command made only of assignments (or `export x=…`) sets variables for the commands after it. */
function recordAssignments(command: ShellCommand, vars: Map<string, string>): void {
  const words = DECLARERS.has(command.words[0]?.text ?? '') ? command.words.slice(1) : command.words;
  if (words.length === 0 || !words.every((w) => ASSIGNMENT.test(w.text))) return;
  for (const w of words) {
    const [, name, value] = ASSIGNMENT.exec(w.text) as RegExpExecArray;
    if (w.dynamic) vars.delete(name as string);
    else vars.set(name as string, value as string);
  }
}
