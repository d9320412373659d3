import fs from 'node:fs';
import path from 'node:path';
import {
  BufferJSON,
  initAuthCreds,
  proto,
  type AuthenticationCreds,
  type AuthenticationState,
  type SignalDataSet,
  type SignalDataTypeMap,
} from '@whiskeysockets/baileys';
import { errorMessage, toError } from '../../errors/error-message.ts';
import { errorCode } from '../../errors/error-code.ts';

/** The linked device's credentials and Signal keys, in the channel's own 0700 folder. */
export interface WhatsAppAuthStore {
  state: AuthenticationState;
  /** Queues a save of the credentials; saves are written one after the other, never interleaved. */
  saveCreds(): Promise<void>;
  /** Resolves once every queued write is on disk. */
  flush(): Promise<void>;
  /** Whether a device was linked with these credentials (a finished QR or pairing-code login). */
  isLinked(): boolean;
  /** Forgets the linked device: every file is removed and fresh credentials take their place. */
  clear(): Promise<void>;
}

export const CREDS_FILE = 'creds.json';

/**
 * A file-per-key auth state like Baileys' `useMultiFileAuthState`, with what a long-running host needs:
 * every write goes through one queue (two saves of the credentials can never interleave and leave a torn
 * file), each write is atomic (temporary file, then rename), files are 0600 in a 0700 folder, and every
 * key type Baileys stores is kept, the v7 ones included (`lid-mapping`, `device-list`, `tctoken`): dropping
 * them loses who a LID is and which devices a contact has. Keys are also held in memory once read or
 * written, so a read never sees a value older than a queued write.
 */
export function openAuthStore(dir: string): WhatsAppAuthStore {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  fs.chmodSync(dir, 0o700);
  const memory = new Map<string, unknown>();
  let queue: Promise<void> = Promise.resolve();
  let failure: Error | undefined;

  const fileOf = (name: string) => path.join(dir, safeFileName(name));

  const enqueue = (work: () => Promise<void>): Promise<void> => {
    const next = queue.then(work).catch((err: unknown) => {
      failure = toError(err);
    });
    queue = next;
    return next.then(() => {
      if (failure) {
        const err = failure;
        failure = undefined;
        throw new Error(`could not save WhatsApp credentials in ${dir}: ${err.message}`);
      }
    });
  };

  const write = (name: string, value: unknown | null) =>
    enqueue(async () => {
      const file = fileOf(name);
      if (value === null || value === undefined) {
        await fs.promises.rm(file, { force: true });
        return;
      }
      const tmp = `${file}.${process.pid}.tmp`;
      await fs.promises.writeFile(tmp, JSON.stringify(value, BufferJSON.replacer), { mode: 0o600 });
      await fs.promises.rename(tmp, file);
    });

  const readFile = (name: string): unknown => {
    try {
      return JSON.parse(fs.readFileSync(fileOf(name), 'utf8'), BufferJSON.reviver) as unknown;
    } catch (err) {
      if (errorCode(err) === 'ENOENT') return null;
      throw new Error(
        `the WhatsApp auth file ${fileOf(name)} is unreadable (${errorMessage(err)}); ` +
          'run `carapace whatsapp logout`, then `carapace whatsapp login`',
      );
    }
  };

  const creds: AuthenticationCreds = (readFile(CREDS_FILE) as AuthenticationCreds | null) ?? initAuthCreds();

  const state: AuthenticationState = {
    creds,
    keys: {
      async get<T extends keyof SignalDataTypeMap>(type: T, ids: string[]) {
        const out: { [id: string]: SignalDataTypeMap[T] } = {};
        for (const id of ids) {
          const name = `${type}-${id}.json`;
          let value = memory.has(name) ? memory.get(name) : readFile(name);
          memory.set(name, value);
          if (value && type === 'app-state-sync-key') {
            value = proto.Message.AppStateSyncKeyData.fromObject(value as object);
          }
          if (value !== null && value !== undefined) out[id] = value as SignalDataTypeMap[T];
        }
        return out;
      },
      async set(data: SignalDataSet) {
        const writes: Promise<void>[] = [];
        for (const [type, entries] of Object.entries(data)) {
          for (const [id, value] of Object.entries(entries ?? {})) {
            const name = `${type}-${id}.json`;
            memory.set(name, value ?? null);
            writes.push(write(name, value ?? null));
          }
        }
        await Promise.all(writes);
      },
    },
  };

  return {
    state,
    saveCreds: () => write(CREDS_FILE, state.creds),
    flush: () => enqueue(async () => undefined),
    isLinked: () => Boolean(state.creds.me?.id && (state.creds.account || state.creds.registered)),
    async clear() {
      await enqueue(async () => {
        memory.clear();
        for (const f of await fs.promises.readdir(dir))
          await fs.promises.rm(path.join(dir, f), { force: true });
      });
      Object.assign(state.creds, initAuthCreds());
      delete state.creds.me;
      delete state.creds.account;
    },
  };
}

/** Key ids hold ':' and '/' (device JIDs, sessions): keep file names portable and inside the folder. */
function safeFileName(name: string): string {
  return name.replace(/[^A-Za-z0-9._@-]/g, (c) => `%${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}
