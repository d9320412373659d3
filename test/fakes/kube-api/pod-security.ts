import type { V1Container, V1Pod } from '@kubernetes/client-node';

/**
 * The Pod Security Standard `restricted` profile (baseline included), as the Kubernetes documentation
 * lists its controls, checked the way the admission plugin does: every violation named. The fake API
 * server refuses a pod with any, as a namespace labelled `pod-security.kubernetes.io/enforce=restricted`
 * does.
 */
export function restrictedViolations(pod: V1Pod): string[] {
  const spec = pod.spec;
  if (!spec) return ['pod has no spec'];
  const out: string[] = [];
  if (spec.hostNetwork) out.push('hostNetwork');
  if (spec.hostPID) out.push('hostPID');
  if (spec.hostIPC) out.push('hostIPC');
  if (spec.securityContext?.sysctls?.length) out.push('sysctls');
  const allowedVolumes = [
    'configMap',
    'csi',
    'downwardAPI',
    'emptyDir',
    'ephemeral',
    'persistentVolumeClaim',
    'projected',
    'secret',
  ];
  for (const v of spec.volumes ?? []) {
    const kinds = Object.keys(v).filter((k) => k !== 'name');
    for (const k of kinds) if (!allowedVolumes.includes(k)) out.push(`volume ${v.name} of type ${k}`);
  }
  const podRunAsNonRoot = spec.securityContext?.runAsNonRoot;
  const podSeccomp = spec.securityContext?.seccompProfile?.type;
  if (podSeccomp && !['RuntimeDefault', 'Localhost'].includes(podSeccomp))
    out.push(`pod seccomp ${podSeccomp}`);
  if (spec.securityContext?.runAsUser === 0) out.push('pod runAsUser 0');
  const all: V1Container[] = [
    ...(spec.initContainers ?? []),
    ...spec.containers,
    ...((spec.ephemeralContainers ?? []) as V1Container[]),
  ];
  for (const c of all) {
    const sc = c.securityContext ?? {};
    const where = `container ${c.name}`;
    if (sc.privileged) out.push(`${where}: privileged`);
    if (sc.allowPrivilegeEscalation !== false) out.push(`${where}: allowPrivilegeEscalation not false`);
    if (!(sc.capabilities?.drop ?? []).includes('ALL')) out.push(`${where}: capabilities not dropping ALL`);
    for (const add of sc.capabilities?.add ?? []) {
      if (add !== 'NET_BIND_SERVICE') out.push(`${where}: adds capability ${add}`);
    }
    if ((sc.runAsNonRoot ?? podRunAsNonRoot) !== true) out.push(`${where}: runAsNonRoot not true`);
    if (sc.runAsUser === 0) out.push(`${where}: runAsUser 0`);
    const seccomp = sc.seccompProfile?.type ?? podSeccomp;
    if (!seccomp || !['RuntimeDefault', 'Localhost'].includes(seccomp))
      out.push(`${where}: seccomp ${seccomp ?? 'unset'}`);
    if (sc.procMount && sc.procMount !== 'Default') out.push(`${where}: procMount ${sc.procMount}`);
    for (const p of c.ports ?? []) if (p.hostPort) out.push(`${where}: hostPort ${p.hostPort}`);
  }
  return out;
}
