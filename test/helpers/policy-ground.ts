import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';
import { createBashClassifier, type BashClassifier } from '../../container-agent/src/bash-gate/index.ts';
import { resolveBashGateWasmPaths } from '../../container-agent/src/bash-gate/wasm-files.ts';
import { createSecretScanner } from '../../host/security/secrets/index.ts';
import { openStore, type Store } from '../../host/store/store.ts';

export interface PolicyGround {
  classifier: BashClassifier;
  store: Store;
}

/**
 * What the security policy suites stand on: the real bash classifier, loaded once per file, and a fresh
 * store per test (closed after it). With `heldSecrets` the store's audit table redacts them, as the host's
 * does. Call at the top level; read `ground()` in a `beforeEach` or a test.
 */
export function usePolicyGround(opts: { heldSecrets?: string[] } = {}): () => PolicyGround {
  let classifier: BashClassifier | undefined;
  let store: Store | undefined;
  let dir = '';
  beforeAll(async () => {
    classifier = await createBashClassifier(resolveBashGateWasmPaths());
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-policy-'));
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  beforeEach(() => {
    const file = path.join(dir, `${Date.now()}-${Math.random()}.db`);
    store = opts.heldSecrets
      ? openStore({ file, redact: createSecretScanner({ heldSecrets: opts.heldSecrets }).redact })
      : openStore({ file });
  });
  afterEach(() => store?.close());
  return () => {
    if (!classifier || !store) throw new Error('usePolicyGround: read it in a test or a beforeEach');
    return { classifier, store };
  };
}
