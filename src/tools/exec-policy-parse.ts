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
// Sticky patterns matched at an index (`lastIndex`): slicing the rest of the line
// for each operator made a line of many operators quadratic.
const VARIABLE_NAME = /[A-Za-z_][A-Za-z0-9_]*|[0-9?$!@*#-]/y;
const REDIRECTION = /&>>|&>|<<<|<<-|<<|<>|<&|>>|>&|>\||[<>]/y;
const SEPARATOR = /&&|\|\||;;|\|&|[;&|()]/y;

/** The match of sticky `pattern` at `index` of `text`, or undefined. */
function matchAt(pattern: RegExp, text: string, index: number): string | undefined {
  pattern.lastIndex = index;
  return pattern.exec(text)?.[0];
}

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
  return new ShellReader(text, vars).read();
}

/** A here-document waiting for its body (read after the line that opened it). */
interface PendingHeredoc {
  delimiter: string;
  stripTabs: boolean;
  command: ShellCommand;
}

/** One pass over a command line: the word and command being built, and what was read so far. */
class ShellReader {
  private readonly commands: ShellCommand[] = [];
  private readonly substitutions: string[] = [];
  private command: ShellCommand = { words: [], redirects: [], input: [] };
  private word: ShellWord | undefined;
  private wordStart = 0;
  private redirect: string | undefined;
  private readonly heredocs: PendingHeredoc[] = [];

  constructor(
    private readonly text: string,
    private readonly vars: Map<string, string>,
  ) {}

  /** Reads the whole line. */
  read(): ParsedShell {
    const { text } = this;
    let i = 0;
    while (i < text.length) i = this.step(i);
    this.endWord(text.length);
    this.endCommand();
    return { commands: this.commands, substitutions: this.substitutions };
  }

  /** Reads what starts at `i`; returns the index after it. */
  private step(i: number): number {
    const { text } = this;
    const c = text[i] as string;
    if (c === ' ' || c === '\t') {
      this.endWord(i);
      return i + 1;
    }
    if (c === '\n') {
      this.endWord(i);
      this.endCommand();
      return readHeredocs(text, i + 1, this.heredocs);
    }
    if (c === '#' && !this.word) {
      const end = text.indexOf('\n', i);
      return end < 0 ? text.length : end;
    }
    if (c === '\\') return this.escaped(i);
    if (c === "'") return this.singleQuoted(i);
    if (c === '"') return this.doubleQuoted(i);
    if (c === '$') {
      this.start(i);
      return this.expand(i);
    }
    if (c === '`') {
      this.start(i);
      return this.backtick(i);
    }
    if ((c === '<' || c === '>') && text[i + 1] === '(') return this.processSubstitution(i);
    if (c === '<' || c === '>' || (c === '&' && text[i + 1] === '>')) return this.redirection(i);
    if (c === ';' || c === '&' || c === '|' || c === '(' || c === ')') return this.separator(i);
    this.start(i);
    this.append(c);
    return i + 1;
  }

  private append(s: string, dynamic = false): void {
    this.word ??= { text: '', raw: '', dynamic: false };
    this.word.text += s;
    if (dynamic) this.word.dynamic = true;
  }

  private start(i: number): void {
    if (!this.word) this.wordStart = i;
  }

  /** Ends the current word: a redirection's target, a here-document's delimiter or the command's next word. */
  private endWord(end: number): void {
    const { word, redirect, command } = this;
    if (!word) return;
    word.raw = this.text.slice(this.wordStart, end);
    if (redirect !== undefined) {
      if (redirect === '<<' || redirect === '<<-') {
        this.heredocs.push({ delimiter: word.text, stripTabs: redirect === '<<-', command });
      } else if (redirect === '<<<') {
        command.input.push(word.text);
      } else if (!(/[<>]&$/.test(redirect) && /^(\d+|-)$/.test(word.text))) {
        command.redirects.push({ op: redirect, target: word });
      }
      this.redirect = undefined;
    } else {
      command.words.push(word);
    }
    this.word = undefined;
  }

  private endCommand(): void {
    const { command } = this;
    if (command.words.length === 0 && command.redirects.length === 0 && command.input.length === 0) return;
    recordAssignments(command, this.vars);
    this.commands.push(command);
    this.command = { words: [], redirects: [], input: [] };
  }

  /** A backslash: the next character as itself; a backslash-newline joins lines. */
  private escaped(i: number): number {
    this.start(i);
    if (this.text[i + 1] !== '\n') this.append(this.text[i + 1] ?? '');
    return i + 2;
  }

  private singleQuoted(i: number): number {
    this.start(i);
    const end = this.text.indexOf("'", i + 1);
    const stop = end < 0 ? this.text.length : end;
    this.append(this.text.slice(i + 1, stop));
    return stop + 1;
  }

  /** `"…"`: escapes of `$`, backtick, `"`, backslash and newline; expansions inside. */
  private doubleQuoted(from: number): number {
    const { text } = this;
    this.start(from);
    this.append('');
    let i = from + 1;
    while (i < text.length && text[i] !== '"') {
      const d = text[i] as string;
      if (d === '\\' && /[$`"\\\n]/.test(text[i + 1] ?? '')) {
        if (text[i + 1] !== '\n') this.append(text[i + 1] as string);
        i += 2;
      } else if (d === '$') i = this.expand(i);
      else if (d === '`') i = this.backtick(i);
      else {
        this.append(d);
        i++;
      }
    }
    return i + 1;
  }

  /** `$'…'`, `$(…)`, `${name}`, `$name` (text[i] is `$`). */
  private expand(i: number): number {
    const { text, vars } = this;
    const next = text[i + 1];
    if (next === "'") {
      const end = text.indexOf("'", i + 2);
      const stop = end < 0 ? text.length : end;
      this.append(ansiC(text.slice(i + 2, stop)));
      return stop + 1;
    }
    if (next === '(') {
      const end = matching(text, i + 1, '(', ')');
      const inner = text.slice(i + 2, end - 1);
      this.substitutions.push(inner.startsWith('(') ? inner.slice(1, -1) : inner);
      this.append(text.slice(i, end), true);
      return end;
    }
    if (next === '{') {
      const end = matching(text, i + 1, '{', '}');
      const name = text.slice(i + 2, end - 1);
      if (NAME.test(name) && vars.has(name)) this.append(vars.get(name) ?? '');
      else this.append(text.slice(i, end), true);
      return end;
    }
    const name = matchAt(VARIABLE_NAME, text, i + 1);
    if (!name) {
      this.append('$');
      return i + 1;
    }
    if (vars.has(name)) this.append(vars.get(name) ?? '');
    else this.append(`$${name}`, true);
    return i + 1 + name.length;
  }

  private backtick(i: number): number {
    const { text } = this;
    let end = i + 1;
    while (end < text.length && text[end] !== '`') end += text[end] === '\\' ? 2 : 1;
    this.substitutions.push(text.slice(i + 1, end).replace(/\\([`\\$])/g, '$1'));
    this.append(text.slice(i, end + 1), true);
    return end + 1;
  }

  /** `<(…)` or `>(…)`. */
  private processSubstitution(i: number): number {
    this.start(i);
    const end = matching(this.text, i + 1, '(', ')');
    this.substitutions.push(this.text.slice(i + 2, end - 1));
    this.append(this.text.slice(i, end), true);
    return end;
  }

  /** A redirection operator; its target is the next word. */
  private redirection(i: number): number {
    const { text } = this;
    // A word of digits right before is the file descriptor (2>), not an argument.
    if (this.word && /^\d+$/.test(text.slice(this.wordStart, i))) this.word = undefined;
    else this.endWord(i);
    const op = matchAt(REDIRECTION, text, i) ?? (text[i] as string);
    this.redirect = op;
    return i + op.length;
  }

  /** `;`, `&`, `|`, `&&`, `||`, `;;`, `|&`, `(` or `)`: the end of a simple command. */
  private separator(i: number): number {
    this.endWord(i);
    this.endCommand();
    const op = matchAt(SEPARATOR, this.text, i) ?? (this.text[i] as string);
    if (op === '|' || op === '|&') this.command.pipedFrom = this.commands[this.commands.length - 1];
    return i + op.length;
  }
}

/** Reads the bodies of pending here-documents from `from`; returns the index after them. */
function readHeredocs(text: string, from: number, pending: PendingHeredoc[]): number {
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
