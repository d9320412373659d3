import { ApiException, type CoreV1Api, type NetworkingV1Api } from '@kubernetes/client-node';
import { describeApiError } from './api-errors.ts';
import { dataFolderSelector, labelValue, POD_LABEL_HOST } from './pod-spec.ts';

export interface KubeLeftoverScope {
  namespace: string;
  dataFolderId: string;
  /**
   * The host instance that runs now, whose pods are live (its runs, its warm pods) and whose NetworkPolicy
   * is in use: kept. Absent: no host runs on the data folder, and everything of it is a leftover.
   */
  keepHost?: string | undefined;
}

export interface KubeLeftovers {
  /** Agent, warm and network-probe pods of the data folder (they carry its labels alike). */
  pods: string[];
  /** The data folder's gateway-only NetworkPolicy, when no host uses it. */
  policies: string[];
  /** What could not be deleted, and why. */
  failed: string[];
}

type LeftoverClients = { core: CoreV1Api; networking: NetworkingV1Api };

const selectorText = (dataFolderId: string) =>
  Object.entries(dataFolderSelector(dataFolderId))
    .map(([k, v]) => `${k}=${v}`)
    .join(',');

/** The data folder's pods and policies that no running host owns, found by label, never by name. */
export async function findKubeLeftovers(
  api: LeftoverClients,
  scope: KubeLeftoverScope,
): Promise<Omit<KubeLeftovers, 'failed'>> {
  const labelSelector = selectorText(scope.dataFolderId);
  const { namespace } = scope;
  const keep = scope.keepHost === undefined ? undefined : labelValue(scope.keepHost);
  const pods = (await api.core.listNamespacedPod({ namespace, labelSelector })).items
    .filter((p) => keep === undefined || p.metadata?.labels?.[POD_LABEL_HOST] !== keep)
    .map((p) => p.metadata!.name!);
  // A running host's policy is what limits its pods' egress: only an idle data folder's is a leftover.
  const policies =
    keep === undefined
      ? (await api.networking.listNamespacedNetworkPolicy({ namespace, labelSelector })).items.map(
          (p) => p.metadata!.name!,
        )
      : [];
  return { pods, policies };
}

const gone = (err: unknown) => err instanceof ApiException && err.code === 404;

/**
 * Deletes what `findKubeLeftovers` found: pods at once (grace 0: their runs are over), then the policies
 * (a policy deleted before its pods would let them reach anything for that moment). One already gone is
 * fine; any other refusal is reported in `failed`, not thrown, so the rest is still cleaned.
 */
export async function deleteKubeLeftovers(
  api: LeftoverClients,
  namespace: string,
  found: Omit<KubeLeftovers, 'failed'>,
): Promise<string[]> {
  const failed: string[] = [];
  const note = (what: string) => (err: unknown) => {
    if (!gone(err)) failed.push(`${what}: ${describeApiError(err)}`);
  };
  await Promise.all(
    found.pods.map((name) =>
      api.core
        .deleteNamespacedPod({ namespace, name, gracePeriodSeconds: 0 })
        .then(() => undefined, note(`pod ${name}`)),
    ),
  );
  for (const name of found.policies) {
    await api.networking
      .deleteNamespacedNetworkPolicy({ namespace, name })
      .then(() => undefined, note(`networkpolicy ${name}`));
  }
  return failed;
}

/** Finds and deletes the data folder's leftovers in one go. */
export async function removeKubeLeftovers(
  api: LeftoverClients,
  scope: KubeLeftoverScope,
): Promise<KubeLeftovers> {
  const found = await findKubeLeftovers(api, scope);
  const failed = await deleteKubeLeftovers(api, scope.namespace, found);
  return { ...found, failed };
}
