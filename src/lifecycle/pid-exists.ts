/**
 * Whether a process id is in use: `kill(pid, 0)` sends nothing and only
 * checks. EPERM means the process exists but belongs to someone else.
 */

/**
 * True when a process with this pid exists, a zombie included (see
 * bus/pid.ts's `processRuns` for "still runs").
 */
export function pidExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
