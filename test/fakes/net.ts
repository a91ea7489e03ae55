/** Loopback ports for tests: one nothing listens on, so a connection to it is refused. */
import { createServer } from 'node:net';

/** A port on 127.0.0.1 that was free a moment ago (connections to it are refused until someone listens). */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
