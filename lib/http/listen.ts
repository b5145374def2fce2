/**
 * Starts an HTTP server on a configured port. A port already taken (EADDRINUSE) or not ours to bind
 * (EACCES) ends the process with one line naming the environment variable to change, instead of an
 * unhandled 'error' event with a stack (bin/run.ts, bin/api.ts).
 */
import { createServer, type RequestListener, type Server } from 'node:http';

export function listenOrExit(handler: RequestListener, port: number, host: string, variable: string): Promise<Server> {
  return new Promise<Server>((resolve, reject) => {
    const s = createServer(handler);
    s.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EADDRINUSE' || err.code === 'EACCES') {
        const why = err.code === 'EADDRINUSE' ? 'is already in use' : 'may not be bound by this user';
        console.error(`error: ${variable}=${port}: ${host}:${port} ${why}; set ${variable} to a free port`);
        process.exit(2);
      }
      reject(err);
    });
    s.listen(port, host, () => resolve(s));
    s.keepAliveTimeout = 5000;
  });
}
