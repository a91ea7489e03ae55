/** Process checks for tests that start and stop child processes. */
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';

/** Whether a process with this id is still alive (signal 0 probes without killing). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Kills a child that is still running (SIGKILL) and waits until it has exited; a finished or missing one is left alone. */
export async function killAndWait(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGKILL');
  await exited;
}
