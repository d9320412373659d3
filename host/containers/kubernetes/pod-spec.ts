import type { V1NetworkPolicy, V1Pod } from '@kubernetes/client-node';
import { AGENT_UID, COMMAND_UID } from '../image/image-base-offline.ts';

/** Labels every object of the runner carries; cleanup selects by them, never by name. */
export const POD_LABEL_MANAGED = 'app.kubernetes.io/managed-by';
export const POD_LABEL_DATA = 'carapace.data';
export const POD_LABEL_HOST = 'carapace.host';
export const POD_LABEL_RUN = 'carapace.run';
export const POD_LABEL_GROUP = 'carapace.group';
/** On a pod: the raw group id, which a label value cannot always hold (a WhatsApp JID has "@"). */
export const POD_ANNOTATION_GROUP = 'carapace.dev/group-id';

/** The container the session folder is copied in and back through (it outlives the agent's). */
export const SESSION_CONTAINER = 'session';

/** Where the two containers meet: the executor's request and answer FIFOs (see DESIGN.md "Kubernetes runner"). */
export const PIPE_DIR = '/run/carapace';
const REQUESTS = `${PIPE_DIR}/requests`;
const ANSWERS = `${PIPE_DIR}/answers`;

export interface AgentPodInput {
  namespace: string;
  /** The data folder's short id (`dataFolderLabel`): scopes names and cleanup to one data folder. */
  dataFolderId: string;
  hostInstanceId: string;
  runId: number | string;
  groupId: string;
  image: string;
  runtimeClass?: string | undefined;
  resources: { cpu: number; memoryMb: number; scratchMb: number };
  quotas: { groupMb: number; sessionMb: number };
  /** The run's hard timeout: the pod's `activeDeadlineSeconds`, enforced by the kubelet even if the host is gone. */
  hardTimeoutMs: number;
  /**
   * How long a warm pod may wait for its run (warm-pods.ts): added to `activeDeadlineSeconds`, which counts
   * from the pod's start, not the run's. The host's own hard timer still starts at the run.
   */
  waitMs?: number | undefined;
  /** Plain settings only (the time zone and the like); a name that looks like a secret is refused. */
  env: Record<string, string>;
}

/** Names a secret travels under; none may reach a pod's spec, where every reader of pods sees it. */
const SECRET_NAME = /KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH/i;

export class PodSpecError extends Error {}

/** A DNS-1123 label value from anything: a group id may hold "@", ":" or upper case. */
export function labelValue(text: string): string {
  const clean = text
    .replace(/[^A-Za-z0-9_.-]/g, '-')
    .slice(0, 63)
    .replace(/^[^A-Za-z0-9]+|[^A-Za-z0-9]+$/g, '');
  return clean || 'x';
}

/** `carapace-<data folder>-<run>`: a DNS-1123 name, unique per data folder (run ids restart at 1 in each). */
export function agentPodName(dataFolderId: string, runId: number | string): string {
  return `carapace-${labelValue(dataFolderId).toLowerCase().slice(0, 16)}-${labelValue(String(runId)).toLowerCase()}`
    .replace(/[^a-z0-9-]/g, '-')
    .slice(0, 63)
    .replace(/-+$/, '');
}

/** The labels that select one data folder's pods (its NetworkPolicy and cleanup use them). */
export function dataFolderSelector(dataFolderId: string): Record<string, string> {
  return { [POD_LABEL_MANAGED]: 'carapace', [POD_LABEL_DATA]: labelValue(dataFolderId) };
}

const restrictedContainerSecurity = (uid: number, gid: number) => ({
  runAsUser: uid,
  runAsGroup: gid,
  runAsNonRoot: true,
  allowPrivilegeEscalation: false,
  privileged: false,
  readOnlyRootFilesystem: true,
  capabilities: { drop: ['ALL'] },
  seccompProfile: { type: 'RuntimeDefault' },
});

/**
 * The pod of one run, as the cluster gets it. Pure, so every hardening choice is visible in one place and
 * asserted by tests (test/unit/containers/kubernetes/pod-spec.test.ts).
 *
 * Two containers for the two principals, because the `restricted` Pod Security Standard forbids the root
 * launcher and the capabilities the Docker runner's image uses to split them: `agent` runs the agent as
 * AGENT_UID with its stdin the IPC stream; `commands` runs the command executor as COMMAND_UID with the
 * agent's gid (files either writes stay writable by the other). They share only an emptyDir holding the
 * executor's request and answer FIFOs; no process namespace.
 */
export function agentPodSpec(input: AgentPodInput): V1Pod {
  for (const name of Object.keys(input.env)) {
    if (SECRET_NAME.test(name)) {
      throw new PodSpecError(
        `the pod's environment must hold no secret, and "${name}" looks like one: ` +
          'a key reaches the agent in run.start over the stream, never in the spec',
      );
    }
  }
  if (input.hardTimeoutMs < 1_000) throw new PodSpecError('the hard timeout must be at least 1 s');
  const gid = AGENT_UID;
  const env = Object.entries(input.env).map(([name, value]) => ({ name, value }));
  const mib = (n: number) => `${n}Mi`;
  // Each container's writable space is its emptyDirs, whose sizes count against ephemeral storage.
  const agentStorage = input.quotas.groupMb + input.quotas.sessionMb + input.resources.scratchMb;
  const agentResources = {
    cpu: String(input.resources.cpu),
    memory: mib(input.resources.memoryMb),
    'ephemeral-storage': mib(agentStorage),
  };
  const keeperResources = { cpu: '100m', memory: '32Mi', 'ephemeral-storage': '8Mi' };
  // The session volume is the agent's workspace root, where it makes its own `session` folder (mode 0700,
  // its own uid: an emptyDir's root belongs to root, and the agent's separation check wants the folder its
  // own); the group volume is mounted over `/workspace/group`. The commands' container never mounts it.
  const agentMounts = [
    { name: 'session', mountPath: '/workspace' },
    { name: 'group', mountPath: '/workspace/group' },
    { name: 'tmp', mountPath: '/tmp' },
    { name: 'pipes', mountPath: PIPE_DIR },
  ];
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: agentPodName(input.dataFolderId, input.runId),
      namespace: input.namespace,
      labels: {
        ...dataFolderSelector(input.dataFolderId),
        [POD_LABEL_HOST]: labelValue(input.hostInstanceId),
        [POD_LABEL_RUN]: labelValue(String(input.runId)),
        [POD_LABEL_GROUP]: labelValue(input.groupId),
      },
      annotations: { [POD_ANNOTATION_GROUP]: input.groupId },
    },
    spec: {
      restartPolicy: 'Never',
      activeDeadlineSeconds: Math.ceil((input.hardTimeoutMs + (input.waitMs ?? 0)) / 1000),
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      shareProcessNamespace: false,
      hostNetwork: false,
      hostPID: false,
      hostIPC: false,
      // The agent has the gateway's address, not a name: no resolver to ask (the NetworkPolicy allows none).
      dnsPolicy: 'None',
      dnsConfig: { nameservers: ['127.0.0.1'] },
      terminationGracePeriodSeconds: 2,
      ...(input.runtimeClass ? { runtimeClassName: input.runtimeClass } : {}),
      securityContext: {
        runAsNonRoot: true,
        fsGroup: gid,
        seccompProfile: { type: 'RuntimeDefault' },
      },
      containers: [
        {
          name: 'agent',
          image: input.image,
          imagePullPolicy: 'IfNotPresent',
          // FIFOs opened read-write never block on a missing other end; the executor starts at its own pace.
          command: ['/bin/bash', '-c'],
          args: [
            `umask 0002 && mkdir -p -m 0700 /workspace/session && ` +
              `mkfifo -m 0660 ${REQUESTS}.new ${ANSWERS}.new && ` +
              `mv ${REQUESTS}.new ${REQUESTS} && mv ${ANSWERS}.new ${ANSWERS} && ` +
              `exec /usr/bin/tini -- node --min-semi-space-size=16 /app/agent.cjs 3<>${ANSWERS} 4<>${REQUESTS}`,
          ],
          workingDir: '/workspace',
          env: [...env, { name: 'CARAPACE_COMMAND_UID', value: String(COMMAND_UID) }],
          stdin: true,
          stdinOnce: true,
          tty: false,
          securityContext: restrictedContainerSecurity(AGENT_UID, gid),
          resources: { requests: agentResources, limits: agentResources },
          volumeMounts: agentMounts,
        },
        {
          name: 'commands',
          image: input.image,
          imagePullPolicy: 'IfNotPresent',
          command: ['/bin/bash', '-c'],
          args: [
            // As launch.sh: the executor's node starts at the agent's first line (its "start"), not before.
            `umask 0002 && until [ -p ${REQUESTS} ] && [ -p ${ANSWERS} ]; do sleep 0.05; done && ` +
              `exec <>${REQUESTS} 1<>${ANSWERS} 2>/dev/null && read -r && exec node /app/executor.cjs`,
          ],
          workingDir: '/workspace/group',
          env: [{ name: 'PATH', value: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' }],
          stdin: false,
          tty: false,
          securityContext: restrictedContainerSecurity(COMMAND_UID, gid),
          // Commands share the agent's budget in the Docker runner; here they get their own, as large.
          resources: { requests: agentResources, limits: agentResources },
          volumeMounts: agentMounts.filter((m) => m.name !== 'session'),
        },
        {
          // The session's keeper: the agent's uid, the session volume only, no process but a wait. The
          // host copies the conversation in and back through it (the agent's container is gone by then, and
          // the commands' must never see the session).
          name: SESSION_CONTAINER,
          image: input.image,
          imagePullPolicy: 'IfNotPresent',
          command: ['/bin/bash', '-c'],
          args: [`trap 'exit 0' TERM; while :; do sleep 3600 & wait $!; done`],
          workingDir: '/workspace',
          stdin: false,
          tty: false,
          securityContext: restrictedContainerSecurity(AGENT_UID, gid),
          resources: { requests: keeperResources, limits: keeperResources },
          volumeMounts: agentMounts.filter((m) => m.name === 'session'),
        },
      ],
      volumes: [
        { name: 'group', emptyDir: { sizeLimit: mib(input.quotas.groupMb) } },
        { name: 'session', emptyDir: { sizeLimit: mib(input.quotas.sessionMb) } },
        { name: 'tmp', emptyDir: { medium: 'Memory', sizeLimit: '64Mi' } },
        { name: 'pipes', emptyDir: { medium: 'Memory', sizeLimit: '1Mi' } },
      ],
    },
  };
}

export interface GatewayPolicyInput {
  namespace: string;
  dataFolderId: string;
  /** `IPv4:port` of the gateway as the pods reach it. */
  gatewayAddress: string;
  /** The gateway's pods, when it runs in the cluster; otherwise its address is allowed by IP. */
  gatewayPodLabels?: Record<string, string> | undefined;
}

/**
 * The data folder's NetworkPolicy: its pods take no connection in and make one only to the gateway's port,
 * no DNS. A cluster whose network plugin ignores NetworkPolicy still accepts this object, so it proves
 * nothing alone: the runner's start probe does (DESIGN.md "Kubernetes runner").
 */
export function gatewayNetworkPolicy(input: GatewayPolicyInput): V1NetworkPolicy {
  const [ip, port] = input.gatewayAddress.split(':') as [string, string];
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: {
      name: `carapace-gateway-only-${labelValue(input.dataFolderId).toLowerCase().slice(0, 16)}`,
      namespace: input.namespace,
      labels: dataFolderSelector(input.dataFolderId),
    },
    spec: {
      podSelector: { matchLabels: dataFolderSelector(input.dataFolderId) },
      policyTypes: ['Ingress', 'Egress'],
      ingress: [],
      egress: [
        {
          to: [
            input.gatewayPodLabels
              ? { podSelector: { matchLabels: input.gatewayPodLabels } }
              : { ipBlock: { cidr: `${ip}/32` } },
          ],
          ports: [{ protocol: 'TCP', port: Number(port) }],
        },
      ],
    },
  };
}

export interface ProbePodInput {
  namespace: string;
  dataFolderId: string;
  hostInstanceId: string;
  image: string;
  runtimeClass?: string | undefined;
  /** `IPv4:port` the NetworkPolicy allows: the probe must reach it, or it proves nothing. */
  gatewayAddress: string;
  /** `IPv4:port` a pod without the policy would reach: the probe must not. */
  forbiddenAddress: string;
  /** Unique per probe, for its name and the watch's selector. */
  probeId: string;
}

/** Exit codes of the probe: it reached the forbidden address / it could not reach the gateway. */
export const PROBE_EXIT_UNLIMITED = 10;
export const PROBE_EXIT_NO_GATEWAY = 11;

/** Tries both addresses with a TCP connect each (3 s), and says by its exit code what it found. */
const PROBE_SCRIPT = `
const net = require('node:net');
const reach = (address) => new Promise((done) => {
  const [host, port] = address.split(':');
  const s = net.connect({ host, port: Number(port), timeout: 3000 });
  s.on('connect', () => { s.destroy(); done(true); });
  s.on('timeout', () => { s.destroy(); done(false); });
  s.on('error', () => done(false));
});
Promise.all([reach(process.env.PROBE_GATEWAY), reach(process.env.PROBE_FORBIDDEN)]).then(([gateway, forbidden]) =>
  process.exit(forbidden ? ${PROBE_EXIT_UNLIMITED} : gateway ? 0 : ${PROBE_EXIT_NO_GATEWAY}));
`;

/**
 * The pod that proves the data folder's NetworkPolicy is enforced: labelled like the runs' pods (so the
 * policy selects it), hardened like them, it must reach the gateway and fail to reach an address any
 * unrestricted pod reaches. A cluster whose network plugin ignores NetworkPolicy accepts the policy object
 * all the same; only this shows the difference.
 */
export function networkProbePodSpec(input: ProbePodInput): V1Pod {
  const runLabel = labelValue(`probe-${input.probeId}`).toLowerCase();
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: agentPodName(input.dataFolderId, runLabel),
      namespace: input.namespace,
      labels: {
        ...dataFolderSelector(input.dataFolderId),
        [POD_LABEL_HOST]: labelValue(input.hostInstanceId),
        [POD_LABEL_RUN]: runLabel,
      },
    },
    spec: {
      restartPolicy: 'Never',
      activeDeadlineSeconds: 60,
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      dnsPolicy: 'None',
      dnsConfig: { nameservers: ['127.0.0.1'] },
      terminationGracePeriodSeconds: 0,
      ...(input.runtimeClass ? { runtimeClassName: input.runtimeClass } : {}),
      securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
      containers: [
        {
          name: 'probe',
          image: input.image,
          imagePullPolicy: 'IfNotPresent',
          command: ['node', '-e', PROBE_SCRIPT],
          env: [
            { name: 'PROBE_GATEWAY', value: input.gatewayAddress },
            { name: 'PROBE_FORBIDDEN', value: input.forbiddenAddress },
          ],
          securityContext: restrictedContainerSecurity(AGENT_UID, AGENT_UID),
          resources: {
            requests: { cpu: '100m', memory: '64Mi', 'ephemeral-storage': '16Mi' },
            limits: { cpu: '100m', memory: '64Mi', 'ephemeral-storage': '16Mi' },
          },
        },
      ],
    },
  };
}
