import fs from 'node:fs';
import path from 'node:path';
import { systemClock, type Clock } from '../time/clock.ts';

export interface ConfigWatchOptions {
  configFile: string;
  /** Quiet time after the last change before `onChange`: an editor's save is several events. */
  debounceMs?: number;
  onChange(): void;
  onError(err: Error): void;
  /** Times the debounce (default: the system clock). */
  clock?: Pick<Clock, 'setTimer'>;
}

/**
 * Watches config.toml for changes, whether written in place by an editor or replaced by a rename (an
 * atomic write, `carapace config set`): the folder is watched, since a watch on the file itself loses
 * the file when it is replaced. Returns the function that stops watching.
 */
export function watchConfigFile({
  configFile,
  debounceMs = 300,
  onChange,
  onError,
  clock = systemClock,
}: ConfigWatchOptions): () => void {
  const name = path.basename(configFile);
  const dir = path.dirname(configFile);
  // A first start runs on the example's defaults with no config folder yet (`npm install && npm start`
  // on a new machine): the folder is made, owner-only as it will hold .env, so the file written later is seen.
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  let cancelPending: (() => void) | undefined;
  const watcher = fs.watch(dir, { persistent: false }, (_event, file) => {
    if (file !== null && file !== name) return;
    cancelPending?.();
    cancelPending = clock.setTimer(onChange, debounceMs);
  });
  watcher.on('error', onError);
  return () => {
    cancelPending?.();
    watcher.close();
  };
}
