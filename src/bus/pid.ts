/** Whether a process recorded by its pid (a private redis-server, a consumer) still runs, and since when. */
import { readFileSync } from 'node:fs';

/** True while `pid` is a running process (not a zombie waiting to be reaped). */
export function processRuns(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  try {
    // /proc/<pid>/stat: "pid (comm) state ..."; comm may hold spaces and parentheses.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.charAt(stat.lastIndexOf(')') + 2);
    return state !== 'Z' && state !== 'X';
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false; // gone since kill(0)
    return true; // no /proc (not Linux): kill(0) is all we know
  }
}

/** The start time of process `pid`, or undefined when there is no such process. */
export function processStart(pid: number): string | undefined {
  try {
    // Fields after the command name (which may hold spaces and parentheses); starttime is the 22nd.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}
