import { parse as parseToml } from 'smol-toml';
import type { ConfigProblem } from './config-error.ts';
import { diffConfigs, type ConfigChange } from './config-diff.ts';
import { configEffects, type ConfigEffect } from './config-effects.ts';
import { exampleLookup } from './load-config.ts';
import { protectedTouches, type ProtectedTouch } from './protected-keys.ts';
import { hostConfigSchema, type HostConfig } from './schema.ts';
import { editTomlText, type PatchEntry } from './toml-edit.ts';
import { problemsFromZod } from './zod-problems.ts';
import { errorMessage } from '../errors/error-message.ts';

export type CheckedPatch =
  | { ok: false; problems: ConfigProblem[] }
  | {
      ok: true;
      /** The new file text, comments kept. */
      text: string;
      /** The effective config before and after the patch. */
      before: HostConfig;
      config: HostConfig;
      changes: ConfigChange[];
      protected: ProtectedTouch[];
      /** Effects the owner must be told of when asked (config-effects.ts); refused ones are in `protected`. */
      effects: ConfigEffect[];
    };

export interface CheckPatchInput {
  file: string;
  /** The current text of the file ('' when it does not exist). */
  text: string;
  patch: PatchEntry[];
  /** The shipped example's text; its values are quoted in the problems. */
  exampleText: string;
}

/**
 * Applies a patch to the config text and checks the result the way the host checks it at start: the
 * same schema and the same one-line-per-problem errors, the effective diff and the protected keys touched.
 * The current file must itself be valid: an edit is never the first thing to notice a broken file.
 */
export function checkConfigPatch({ file, text, patch, exampleText }: CheckPatchInput): CheckedPatch {
  const example = exampleLookup(parseToml(exampleText));
  let current: unknown;
  try {
    current = parseToml(text);
  } catch (err) {
    return { ok: false, problems: [{ file, key: '', problem: errorMessage(err).split('\n')[0] ?? '' }] };
  }
  const before = hostConfigSchema.safeParse(current);
  if (!before.success) return { ok: false, problems: problemsFromZod(file, before.error, example) };
  let edited: string;
  try {
    edited = editTomlText(text, patch);
  } catch (err) {
    return { ok: false, problems: [{ file, key: '', problem: errorMessage(err) }] };
  }
  const after = hostConfigSchema.safeParse(parseToml(edited));
  if (!after.success) return { ok: false, problems: problemsFromZod(file, after.error, example) };
  return {
    ok: true,
    text: edited,
    before: before.data,
    config: after.data,
    changes: diffConfigs(before.data, after.data),
    protected: protectedTouches(patch, before.data, after.data),
    effects: configEffects(before.data, after.data).filter((e) => e.verdict === 'ask'),
  };
}
