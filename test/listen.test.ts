import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';

// lib/core/listen.ts: a busy port is one line naming the variable, exit 2, no stack
describe('listenOrExit on a busy port', () => {
  let blocker: Server;
  before(async () => {
    blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', () => r()));
  });
  after(() => blocker.close());

  it('prints one line naming the variable and exits 2', () => {
    const port = (blocker.address() as AddressInfo).port;
    const script = `import { listenOrExit } from './lib/core/listen.ts'; await listenOrExit(() => undefined, ${port}, '127.0.0.1', 'LEGACY_PORT');`;
    const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 30_000 });
    expect(r.status).to.equal(2);
    const lines = r.stderr.trim().split('\n');
    expect(lines).to.have.length(1);
    expect(lines[0]).to.equal(`error: LEGACY_PORT=${port}: 127.0.0.1:${port} is already in use; set LEGACY_PORT to a free port`);
  });
});
