/**
 * Starts an HTTP server on a configured port. A port already taken (EADDRINUSE) or not ours to bind
 * (EACCES) ends the process with one line naming the environment variable to change, instead of an
 * unhandled 'error' event with a stack (bin/run.ts, bin/api.ts).
 */
import { createServer, type RequestListener, type Server } from 'node:http';
import type { Config } from './config.js';

export type ServerTimeouts = Config['http'];

/**
 * A node:http server with the configured bounds (lib/core/config.ts `http`), so that no client holds a
 * connection longer than they allow: headers must be complete within `headersTimeoutMs` (also the
 * bound of a connection that sends nothing at all), the whole request within `requestTimeoutMs`
 * (408 and close otherwise: a slow-body sender), and an idle keep-alive connection is closed after
 * `keepAliveTimeoutMs`. Node checks the first two every `connectionsCheckingIntervalMs`.
 */
export function createBoundedServer(handler: RequestListener, t: ServerTimeouts): Server {
  const s = createServer(
    { headersTimeout: t.headersTimeoutMs, requestTimeout: t.requestTimeoutMs, connectionsCheckingInterval: t.connectionsCheckingIntervalMs },
    handler,
  );
  s.keepAliveTimeout = t.keepAliveTimeoutMs;
  return s;
}

export function listenOrExit(handler: RequestListener, port: number, host: string, variable: string, timeouts?: ServerTimeouts): Promise<Server> {
  return new Promise<Server>((resolve, reject) => {
    const s = timeouts ? createBoundedServer(handler, timeouts) : createServer(handler);
    if (!timeouts) s.keepAliveTimeout = 5000;
    s.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EADDRINUSE' || err.code === 'EACCES') {
        const why = err.code === 'EADDRINUSE' ? 'is already in use' : 'may not be bound by this user';
        console.error(`error: ${variable}=${port}: ${host}:${port} ${why}; set ${variable} to a free port`);
        process.exit(2);
      }
      reject(err);
    });
    s.listen(port, host, () => resolve(s));
  });
}
