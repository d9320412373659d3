import fs from 'node:fs';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { createConfigFileStore, hashText, StaleConfigError } from '../../../host/config/config-file-store.ts';
import { useTempDirs } from '../../helpers/temp-dir.ts';

const tempDir = useTempDirs();
let configFile: string;
let clock: number;

beforeEach(() => {
  configFile = path.join(tempDir(), 'config.toml');
  clock = Date.UTC(2026, 0, 1);
});

const store = (keep?: number) =>
  createConfigFileStore({ configFile, keep, now: () => new Date((clock += 1000)) });

describe('config file store', () => {
  it('reads an absent file as empty and writes the first version without a backup', () => {
    const s = store();
    expect(s.read()).toEqual({ text: '', hash: hashText('') });
    s.write('a = 1\n', hashText(''));
    expect(fs.readFileSync(configFile, 'utf8')).toBe('a = 1\n');
    expect(fs.statSync(configFile).mode & 0o777).toBe(0o600);
    expect(s.history()).toEqual([]);
  });

  it('refuses a write based on a version that is no longer the file', () => {
    fs.writeFileSync(configFile, 'a = 1\n');
    const s = store();
    const base = s.read().hash;
    fs.writeFileSync(configFile, 'a = 2\n'); // a hand edit meanwhile
    expect(() => s.write('a = 3\n', base)).toThrow(StaleConfigError);
    expect(fs.readFileSync(configFile, 'utf8')).toBe('a = 2\n');
    expect(fs.readdirSync(path.dirname(configFile)).sort()).toEqual(['config.toml']);
  });

  it('keeps each replaced version in a ring of the newest N, 0600, with when and which hashes', () => {
    fs.writeFileSync(configFile, 'v = 0\n');
    const s = store(2);
    for (let v = 1; v <= 3; v++) s.write(`v = ${v}\n`, s.read().hash);
    const history = s.history();
    expect(history.map((b) => s.backupText(b))).toEqual(['v = 2\n', 'v = 1\n']);
    expect(history[0]).toMatchObject({ hash: hashText('v = 2\n'), replacedBy: hashText('v = 3\n') });
    expect(history[0]?.replacedAt).toBe('2026-01-01T00:00:03.000Z');
    const files = fs.readdirSync(s.historyDir).filter((f) => f.endsWith('.toml'));
    expect(files).toHaveLength(2);
    for (const f of files) expect(fs.statSync(path.join(s.historyDir, f)).mode & 0o777).toBe(0o600);
    // No temp file is left next to the config.
    expect(fs.readdirSync(path.dirname(configFile)).sort()).toEqual(['config.history', 'config.toml']);
  });

  it('rolls back by writing a backup over the current version, which is kept in turn', () => {
    fs.writeFileSync(configFile, 'v = 1\n');
    const s = store();
    s.write('v = 2\n', s.read().hash);
    const [previous] = s.history();
    if (!previous) throw new Error('no backup');
    s.write(s.backupText(previous), s.read().hash);
    expect(fs.readFileSync(configFile, 'utf8')).toBe('v = 1\n');
    expect(s.backupText(s.history()[0] ?? previous)).toBe('v = 2\n');
  });
});
