/**
 * The Kubernetes runner's scenarios on a real cluster (kind, k3s, any), run only when `KUBECONFIG` names
 * one: a reply from a pod, a quota breach stopped at the copy back, egress beyond the gateway refused, and
 * a host restart leaving no pod. The cluster must be prepared as README "Running turns on Kubernetes" says
 * (the agent image loaded, the namespace, RBAC, an enforcing network plugin). The host runs here, outside
 * the cluster; the pods reach its gateway at CARAPACE_KUBE_GATEWAY (`IPv4:port`, e.g. the kind network's
 * gateway and a free port). Without a cluster the suite is skipped with that reason in its name.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { folderUsage } from '../../host/containers/mounts/disk-quota.ts';
import { loadKubeConfig } from '../../host/containers/kubernetes/kube-config.ts';
import { dataFolderLabel } from '../../host/containers/run/data-folder-label.ts';
import { reply } from '../fakes/fake-provider.ts';
import { turnResponder } from '../fakes/e2e-responders.ts';
import { bash, resultsOf, runTools, securityResponder } from '../fakes/security-responders.ts';
import { eventually, startE2eHost, type E2eHost } from './e2e-harness.ts';

const env = {
  kubeconfig: process.env.KUBECONFIG,
  gateway: process.env.CARAPACE_KUBE_GATEWAY,
  image: process.env.CARAPACE_KUBE_IMAGE,
  namespace: process.env.CARAPACE_KUBE_NAMESPACE ?? 'carapace',
  probe: process.env.CARAPACE_KUBE_PROBE_ADDRESS,
  /** An address outside the cluster every unrestricted pod reaches (the egress scenario's target). */
  outside: process.env.CARAPACE_KUBE_OUTSIDE ?? '1.1.1.1:443',
};
const missing = [
  ['KUBECONFIG', env.kubeconfig],
  ['CARAPACE_KUBE_GATEWAY', env.gateway],
  ['CARAPACE_KUBE_IMAGE', env.image],
].flatMap(([name, value]) => (value ? [] : [name]));

if (missing.length > 0) {
  describe('e2e: the Kubernetes runner on a real cluster', () => {
    it.skip(`skipped: ${missing.join(', ')} not set (no cluster to run on; see README "Running turns on Kubernetes")`, () => {});
  });
} else {
  describe('e2e: the Kubernetes runner on a real cluster', () => {
    let h: E2eHost;
    let core: CoreV1Api;
    const ourPods = async () =>
      (
        await core.listNamespacedPod({
          namespace: env.namespace,
          labelSelector: `carapace.data=${dataFolderLabel(h.paths.dataDir)}`,
        })
      ).items;

    beforeAll(async () => {
      const port = Number(env.gateway!.split(':')[1]);
      core = loadKubeConfig({ kubeconfig: env.kubeconfig! }).makeApiClient(CoreV1Api);
      h = await startE2eHost({
        responder: turnResponder((t) => reply.text(`[${t.group}] from a pod: ${t.text}`)),
        config: {
          gateway: {
            port,
            retry_base_ms: 50,
            prices: { 'fake-model': { input_per_mtok_usd: 0, output_per_mtok_usd: 0 } },
          },
          runner: {
            kind: 'kubernetes',
            kubernetes: {
              kubeconfig: env.kubeconfig,
              namespace: env.namespace,
              image: env.image,
              gateway_address: env.gateway,
              ...(env.probe ? { probe_address: env.probe } : {}),
            },
          },
          runs: { max_attempts: 1 },
          containers: { group_quota_mb: 2 },
        },
      });
      await h.addLocalGroups('alpha', 'beta', 'gamma');
    }, 600_000);

    afterAll(async () => {
      await h?.stop();
    }, 120_000);

    it('answers a console message from a pod and leaves no pod', async () => {
      const res = await h.send('alpha', '@Andy hello over the cluster', 300);
      expect(res.stdout).toContain('[alpha] from a pod: @Andy hello over the cluster');
      await eventually('no pod left', async () => (await ourPods()).length === 0, 60_000);
    }, 400_000);

    it('stops a write past the group quota at the copy back, and the run says why', async () => {
      const tag = crypto.randomBytes(4).toString('hex');
      h.fake.setResponder(
        securityResponder({
          beta: runTools([bash(`head -c 3000000 /dev/zero > big-${tag}.bin; echo done`)]),
        }),
      );
      await h.send('beta', '@Andy fill the folder', 300);
      const run = await eventually(
        'the run to end',
        () => h.runs('beta').at(-1)?.exitReason ?? undefined,
        60_000,
      );
      // A cluster's kubelet may evict the pod over its volume's sizeLimit first: that ends the run too.
      expect(run).toMatch(/disk quota|evict|container error/i);
      const groupDir = path.join(h.paths.groupsDir, 'beta');
      expect(fs.existsSync(path.join(groupDir, `big-${tag}.bin`))).toBe(false);
      expect((await folderUsage(groupDir)).bytes).toBeLessThanOrEqual(2 * 1024 * 1024);
    }, 400_000);

    it("refuses a command's connection beyond the gateway, while the gateway answers", async () => {
      const probe = (address: string) =>
        `timeout 4 bash -c 'exec 3<>/dev/tcp/${address.replace(':', '/')}' 2>/dev/null && echo "${address} reached" || echo "${address} refused"`;
      h.fake.setResponder(
        securityResponder({ gamma: runTools([bash(`${probe(env.gateway!)}; ${probe(env.outside)}`)]) }),
      );
      const res = await h.send('gamma', '@Andy try the network', 300);
      const [result] = resultsOf(res.stdout);
      expect(result).toContain(`${env.gateway} reached`);
      expect(result).toContain(`${env.outside} refused`);
    }, 400_000);

    it('leaves no pod once a restarted host is up, and answers after', async () => {
      h.fake.setResponder(turnResponder((t) => reply.text(`[${t.group}] after the restart: ${t.text}`)));
      await h.restart();
      expect(await ourPods()).toEqual([]);
      const res = await h.send('alpha', '@Andy are you back?', 300);
      expect(res.stdout).toContain('[alpha] after the restart: @Andy are you back?');
    }, 600_000);
  });
}
