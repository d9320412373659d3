/**
 * Config editing from the admin chat (issue 11) through real containers: the admin agent reads config.toml
 * and its hash (read_config), proposes a typed patch against that hash (propose_config); the host refuses
 * protected keys and stale proposals without asking anyone, has the Cop review the rest and asks the owner,
 * and writes the file (comments kept, atomically, the old version in the ring) only on approval.
 */
import fs from 'node:fs';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createConfigFileStore, hashText } from '../../host/config/config-file-store.ts';
import { describeDocker } from '../helpers/docker-available.ts';
import { turnResponder } from '../fakes/e2e-responders.ts';
import { reply, type ToolCallSpec } from '../fakes/fake-provider-script.ts';
import {
  approvalNotices,
  auditMark,
  auditSince,
  copReviews,
  detailsOf,
  nextApproval,
  ownerSays,
  RESULT_SEPARATOR,
  resultsOf,
  runReply,
  runTools,
  securityResponder,
} from '../fakes/security-responders.ts';
import { startE2eHost, type E2eHost } from './e2e-harness.ts';

interface Change {
  key: string;
  value: unknown;
}

/**
 * The admin agent's turn: read_config, then propose_config against the hash it read (after `meanwhile`,
 * which a test uses to change the file under it), then a reply quoting both tool results.
 */
function proposeTurn(
  changes: Change[],
  meanwhile: () => void = () => undefined,
  reason = 'the owner asked for it in this chat',
) {
  return turnResponder(
    () => reply.toolCalls([{ name: 'read_config', arguments: {} }]),
    (t) => {
      const hash = /^hash: ([0-9a-f]{64})\n/.exec(t.toolResults[0] ?? '')?.[1];
      if (!hash) throw new Error(`read_config returned no hash: ${t.toolResults[0]}`);
      meanwhile();
      const call: ToolCallSpec = {
        name: 'propose_config',
        arguments: { base_hash: hash, changes, reason },
      };
      return reply.toolCalls([call]);
    },
    (t) => reply.text(t.toolResults.join(RESULT_SEPARATOR)),
  );
}

await describeDocker(
  'e2e config editing: the admin agent proposes, the Cop reviews, the owner decides',
  () => {
    let h: E2eHost;
    const seen = new Set<string>();
    let original: string;
    const configText = () => fs.readFileSync(h.paths.configFile, 'utf8');
    const configReviews = (from: number) =>
      copReviews(h.fake.requests, from).filter((r) => r.operation === 'config.propose');
    const proposal = (reply: string) => resultsOf(reply)[1] ?? '';

    beforeAll(async () => {
      h = await startE2eHost({ config: { runs: { max_attempts: 1 } } });
      await h.addLocalGroups('alpha');
      // The owner's comments, which every change must keep.
      const written = configText();
      original = `# Carapace, set up by the owner\n${written.replace('name = "Andy"', 'name = "Andy" # the trigger word')}`;
      fs.writeFileSync(h.paths.configFile, original);
    }, 180_000);
    afterAll(async () => {
      await h?.stop();
    }, 60_000);

    it('a proposal touching a protected key is refused without asking the Cop or the owner', async () => {
      h.fake.setResponder(
        securityResponder({
          main: proposeTurn([
            { key: 'assistant.timezone', value: 'Europe/Berlin' },
            { key: 'provider.base_url', value: 'https://llm.example.net/v1' },
          ]),
        }),
      );
      const mark = auditMark(h);
      const requests = h.fake.requests.length;
      const res = await h.send('main', 'use my other provider and Berlin time');
      expect(res.code).toBe(0);
      const [read, result] = resultsOf(runReply(h, 'main'));
      expect(read).toBe(`hash: ${hashText(original)}\n--- config.toml ---\n${original}`);
      expect(result).toBe(
        'refused: Only the owner can change these, in config.toml or with `carapace config set`; nothing was ' +
          'changed and nobody was asked:\nprovider.base_url (where the real provider key is sent)',
      );
      expect(configText()).toBe(original);
      expect(configReviews(requests)).toEqual([]);
      expect(approvalNotices(h).filter((n) => n.text.includes('config.propose'))).toEqual([]);
      expect(
        auditSince(h, mark)
          .filter((r) => r.operation.startsWith('config.'))
          .map((r) => [r.operation, r.decision, r.groupId, r.reason]),
      ).toEqual([['config.propose', 'refused', 'main', 'protected keys: provider.base_url']]);
    }, 120_000);

    it('a stale proposal (the file changed after the agent read it) is refused and the hand edit stays', async () => {
      const handEdit = original.replace('[runs]', '# edited by hand meanwhile\n[runs]');
      h.fake.setResponder(
        securityResponder({
          main: proposeTurn([{ key: 'assistant.timezone', value: 'Europe/Berlin' }], () =>
            fs.writeFileSync(h.paths.configFile, handEdit),
          ),
        }),
      );
      const requests = h.fake.requests.length;
      const res = await h.send('main', 'switch to Berlin time');
      expect(res.code).toBe(0);
      expect(proposal(runReply(h, 'main'))).toBe(
        'refused: config.toml changed since you read it, so nothing was changed; read it again (read_config) ' +
          'and redo the change on the new version',
      );
      expect(configText()).toBe(handEdit);
      expect(configReviews(requests)).toEqual([]);
      fs.writeFileSync(h.paths.configFile, original);
    }, 120_000);

    it('a non-admin group is not offered the config tools, and the file stays', async () => {
      h.fake.setResponder(
        securityResponder({
          alpha: runTools([
            { name: 'read_config', arguments: {} },
            {
              name: 'propose_config',
              arguments: {
                base_hash: hashText(original),
                changes: [{ key: 'assistant.name', value: 'Evil' }],
                reason: 'x',
              },
            },
          ]),
        }),
      );
      const res = await h.send('alpha', '@Andy rename yourself');
      expect(res.code).toBe(0);
      for (const [result, tool] of resultsOf(runReply(h, 'alpha')).map((r, i) => [
        r,
        ['read_config', 'propose_config'][i],
      ]))
        expect(result).toMatch(new RegExp(`^Error: there is no tool named "${tool}"`));
      expect(configText()).toBe(original);
    }, 120_000);

    it('a Cop flag is shown to the owner; a denial changes nothing', async () => {
      // The scripted Cop flags parameters that contain the word FLAGGED.
      const turn = proposeTurn([{ key: 'assistant.name', value: 'Bob' }], undefined, 'FLAGGED: rename');
      h.fake.setResponder(securityResponder({ main: turn }));
      const mark = auditMark(h);
      const sent = h.send('main', 'call yourself Bob');
      const ask = await nextApproval(h, seen, 'config.propose');
      expect(ask.text).toContain('assistant.name: \\"Andy\\" → \\"Bob\\"');
      expect(ask.text).toContain(
        'a config change; FLAGGED by the Cop: scripted flag: the parameters contain \\"FLAGGED\\"',
      );
      expect(await ownerSays(h, `deny ${ask.id}`)).toBe(`Denied ${ask.id}: config.propose will not run.`);
      expect((await sent).code).toBe(0);
      expect(proposal(runReply(h, 'main'))).toBe(
        'denied: The owner did not approve the change; nothing was changed.',
      );
      expect(configText()).toBe(original);
      // Nothing replaced, so nothing went to the backup ring.
      expect(createConfigFileStore({ configFile: h.paths.configFile }).history()).toEqual([]);
      expect(
        auditSince(h, mark)
          .filter((r) => r.operation === 'config.propose')
          .map((r) => r.decision),
      ).toEqual(['approval-asked', 'approval-denied', 'denied']);
    }, 120_000);

    it('assistant.name = "Max": the Cop passes, the owner approves, the file changes atomically with its comments kept and @Max triggers without a restart; config rollback restores @Andy', async () => {
      h.fake.setResponder(
        securityResponder({ main: proposeTurn([{ key: 'assistant.name', value: 'Max' }]) }),
      );
      const mark = auditMark(h);
      const requests = h.fake.requests.length;
      const inodeBefore = fs.statSync(h.paths.configFile).ino;
      const sent = h.send('main', 'call yourself Max from now on');
      const ask = await nextApproval(h, seen, 'config.propose');
      // The owner sees the Cop's verdict, the readable diff and what the approval is bound to.
      expect(ask.text).toContain('a config change; the Cop passed it: scripted pass: an ordinary action');
      expect(ask.text).toContain('assistant.name: \\"Andy\\" → \\"Max\\"');
      expect(ask.text).toContain(hashText(original));
      expect(configReviews(requests).map((r) => r.params)).toEqual([
        {
          changes: [{ key: 'assistant.name', value: 'Max' }],
          diff: ['assistant.name: "Andy" → "Max"'],
          reason: 'the owner asked for it in this chat',
        },
      ]);
      expect(await ownerSays(h, `approve ${ask.id}`)).toBe(
        `Approved ${ask.id}: config.propose may run once, with the parameters shown.`,
      );
      expect((await sent).code).toBe(0);
      expect(proposal(runReply(h, 'main'))).toMatch(/^applied: Changed:\nassistant\.name: "Andy" → "Max"/);

      const changed = configText();
      expect(changed).toBe(
        original.replace('name = "Andy" # the trigger word', 'name = "Max" # the trigger word'),
      );
      // Replaced by a rename (a new inode), no temporary file left beside it, the old version in the ring.
      expect(fs.statSync(h.paths.configFile).ino).not.toBe(inodeBefore);
      expect(fs.readdirSync(h.paths.configDir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
      const rows = auditSince(h, mark).filter((r) => r.operation.startsWith('config.propose'));
      expect(rows.map((r) => [r.operation, r.decision])).toEqual([
        ['config.propose.cop', 'passed'],
        ['config.propose', 'approval-asked'],
        ['config.propose', 'approval-granted'],
        ['config.propose', 'approval-executed'],
        ['config.propose', 'applied'],
      ]);
      expect(detailsOf(rows.at(-1)!)).toMatchObject({
        baseHash: hashText(original),
        newHash: hashText(changed),
        diff: ['assistant.name: "Andy" → "Max"'],
      });

      // Without a restart: @Max starts a run in a group, @Andy is only context now.
      // The proposal's own reload or the file watcher's, whichever came first, applied it.
      expect(proposal(runReply(h, 'main'))).toMatch(
        /\n(applied to the running host, no restart needed|the running host already runs this version)$/,
      );
      h.fake.setResponder(securityResponder({ alpha: () => reply.text('Max here') }));
      const alphaRuns = h.runs('alpha').length;
      const andy = await h.send('alpha', '@Andy are you there?');
      expect(andy.code).toBe(0);
      expect(andy.stderr).toMatch(/stored as context; .*mention @Max to get one/);
      expect(h.runs('alpha')).toHaveLength(alphaRuns);
      const max = await h.send('alpha', '@Max are you there?');
      expect(max.code, max.stderr).toBe(0);
      expect(max.stdout).toBe('Max here\n');
      expect(h.runs('alpha')).toHaveLength(alphaRuns + 1);

      const rollback = await h.cli(['config', 'rollback']);
      expect(rollback.code, rollback.stderr).toBe(0);
      expect(rollback.stdout).toContain('assistant.name: "Max" → "Andy"');
      expect(configText()).toBe(original);
      // The rollback reached the running host too: @Max is context again, @Andy triggers.
      const maxAgain = await h.send('alpha', '@Max still there?');
      expect(maxAgain.stderr).toMatch(/mention @Andy to get one/);
      const andyAgain = await h.send('alpha', '@Andy back?');
      expect(andyAgain.stdout).toBe('Max here\n');
      expect(h.runs('alpha')).toHaveLength(alphaRuns + 2);
    }, 240_000);
  },
);
