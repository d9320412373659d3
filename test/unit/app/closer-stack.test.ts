import { describe, expect, it } from 'vitest';
import { createCloserStack } from '../../../host/app/closer-stack.ts';
import { HostStartError } from '../../../host/app/start-error.ts';
import { explainError } from '../../../host/cli/cli-errors.ts';
import { HostLockedError } from '../../../host/store/host-lock.ts';

describe('closer stack', () => {
  it('closes the parts last pushed first, each once, with the reason', async () => {
    const closed: string[] = [];
    const stack = createCloserStack();
    for (const name of ['lock', 'database', 'socket'])
      stack.push(name, (r) => void closed.push(`${name}:${r}`));
    expect(stack.names()).toEqual(['lock', 'database', 'socket']);
    await stack.closeAll('stopping');
    await stack.closeAll('again');
    expect(closed).toEqual(['socket:stopping', 'database:stopping', 'lock:stopping']);
    expect(stack.names()).toEqual([]);
  });

  it('keeps closing the others when one part fails, and reports that part', async () => {
    const closed: string[] = [];
    const stack = createCloserStack();
    stack.push('lock', () => void closed.push('lock'));
    stack.push('runtime', async () => {
      throw new Error('network in use');
    });
    stack.push('channel', () => void closed.push('channel'));
    const failures = await stack.closeAll('start failed');
    expect(closed).toEqual(['channel', 'lock']);
    expect(failures.map((f) => [f.name, (f.error as Error).message])).toEqual([
      ['runtime', 'network in use'],
    ]);
  });

  it('waits for async closers in turn, so a later part is only closed once the earlier one is down', async () => {
    const order: string[] = [];
    const stack = createCloserStack();
    stack.push('store', () => void order.push('store'));
    stack.push('queue', async () => {
      await new Promise((r) => setImmediate(r));
      order.push('queue');
    });
    await stack.closeAll('stop');
    expect(order).toEqual(['queue', 'store']);
  });

  it('refuses a part that comes up after the stack was unwound, so it cannot be left open', async () => {
    const stack = createCloserStack();
    await stack.closeAll('stop');
    expect(() => stack.push('late channel', () => undefined)).toThrow(/late channel.*shutting down/);
  });
});

describe('a failed start', () => {
  it('names the step and the cause, and keeps the exit code of a cause the owner can fix', () => {
    const err = new HostStartError("taking the data folder's lock", new HostLockedError('already running'), [
      { name: 'database', error: new Error('busy') },
    ]);
    expect(err.message).toBe(
      "Carapace could not start: taking the data folder's lock failed: already running\n  could not close database: busy",
    );
    expect(explainError(err, 'usage')).toEqual({ code: 1, message: err.message });
    expect(explainError(new HostStartError('x', new Error('bug'), []), 'usage')).toBeUndefined();
  });
});
