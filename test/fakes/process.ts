/** Process checks for tests that start and stop child processes. */

/** Whether a process with this id is still alive (signal 0 probes without killing). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
