import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough, type Duplex } from 'node:stream';
import type Docker from 'dockerode';
import type { V1Container, V1ContainerStatus, V1Pod, V1PodStatus } from '@kubernetes/client-node';

/**
 * The fake API server's kubelet: each pod's containers run as real Docker containers made from the pod spec,
 * the way a node's runtime would run them. What the spec says about isolation is what Docker is told
 * (user and group, read-only root, dropped capabilities, no privilege escalation, memory and CPU limits,
 * the DNS servers), so a test of the runner proves what the spec makes the container do. emptyDir volumes
 * are folders of the test's own, mounted into every container that names them.
 *
 * Not a kubelet: no restarts, no probes, no init containers, no image pulls (the image must be local).
 */
export interface DockerPods {
  /** Starts the pod's containers; `onStatus` gets each change of the pod's status. */
  run(pod: V1Pod, onStatus: (status: V1PodStatus) => void): void;
  /** The container's streams, as `kubectl attach` gets them; rejects when it is not running. */
  attach(pod: V1Pod, container: string, want: { stdin: boolean }): Promise<PodStreams>;
  /** A command run in the container (`kubectl exec`), as its user; `ended` has its exit code. */
  exec(pod: V1Pod, container: string, command: string[], want: { stdin: boolean }): Promise<PodStreams>;
  /** Stops the pod's containers (SIGTERM, SIGKILL after `graceSeconds`) and removes them and their volumes. */
  remove(pod: V1Pod, graceSeconds: number): Promise<void>;
  /** Removes every container and folder this fake made. */
  close(): Promise<void>;
}

export interface PodStreams {
  stdin: Duplex | undefined;
  stdout: PassThrough;
  stderr: PassThrough;
  /** Resolves when the stream ends, with the exit code when it is known (exec). */
  ended: Promise<number | undefined>;
}

export interface DockerPodsOptions {
  docker: Docker;
  /** The Docker network every pod joins: the test's stand-in for the cluster network and its policy. */
  network: string;
  /** Labels on every container, so a test cleans up only its own. */
  labels: Record<string, string>;
}

interface RunningPod {
  containers: Map<string, Docker.Container>;
  statuses: V1ContainerStatus[];
  dirs: string[];
  deadline?: NodeJS.Timeout;
  status: V1PodStatus;
  onStatus: (status: V1PodStatus) => void;
  started: Promise<void>;
}

const keyOf = (pod: V1Pod) => `${pod.metadata!.namespace}/${pod.metadata!.name}`;

const mebibytes = (quantity: string | undefined): number | undefined => {
  const m = /^(\d+)Mi$/.exec(quantity ?? '');
  return m ? Number(m[1]) * 1024 * 1024 : undefined;
};

function createOptions(
  pod: V1Pod,
  c: V1Container,
  volumeDirs: Map<string, string>,
  options: DockerPodsOptions,
): Docker.ContainerCreateOptions {
  const sc = c.securityContext ?? {};
  const podSc = pod.spec!.securityContext ?? {};
  const uid = sc.runAsUser ?? podSc.runAsUser;
  const gid = sc.runAsGroup ?? podSc.runAsGroup ?? uid;
  const memory = mebibytes(c.resources?.limits?.memory);
  return {
    name: `fake-kube-${pod.metadata!.name}-${c.name}`,
    Image: c.image,
    ...(c.command ? { Entrypoint: c.command } : {}),
    ...(c.args ? { Cmd: c.args } : {}),
    ...(uid !== undefined ? { User: `${uid}:${gid}` } : {}),
    ...(c.workingDir ? { WorkingDir: c.workingDir } : {}),
    Env: (c.env ?? []).map((e) => `${e.name}=${e.value ?? ''}`),
    Labels: { ...options.labels, 'fake-kube.pod': keyOf(pod) },
    AttachStdin: !!c.stdin,
    AttachStdout: true,
    AttachStderr: true,
    OpenStdin: !!c.stdin,
    StdinOnce: !!c.stdinOnce,
    Tty: false,
    HostConfig: {
      ReadonlyRootfs: !!sc.readOnlyRootFilesystem,
      CapDrop: sc.capabilities?.drop ?? [],
      CapAdd: sc.capabilities?.add ?? [],
      SecurityOpt: sc.allowPrivilegeEscalation === false ? ['no-new-privileges'] : [],
      Privileged: !!sc.privileged,
      ...(podSc.fsGroup !== undefined ? { GroupAdd: [String(podSc.fsGroup)] } : {}),
      ...(memory ? { Memory: memory, MemorySwap: memory } : {}),
      ...(c.resources?.limits?.cpu ? { NanoCpus: Math.round(Number(c.resources.limits.cpu) * 1e9) } : {}),
      Binds: (c.volumeMounts ?? []).map((m) => {
        const dir = volumeDirs.get(m.name);
        if (!dir) throw new Error(`container ${c.name} mounts volume ${m.name}, which the pod does not have`);
        return `${dir}:${m.mountPath}${m.readOnly ? ':ro' : ''}`;
      }),
      NetworkMode: pod.spec!.hostNetwork ? 'host' : options.network,
      ...(pod.spec!.dnsConfig?.nameservers ? { Dns: pod.spec!.dnsConfig.nameservers } : {}),
      LogConfig: { Type: 'none', Config: {} },
    },
  };
}

export function createDockerPods(options: DockerPodsOptions): DockerPods {
  const { docker } = options;
  const pods = new Map<string, RunningPod>();

  function publish(p: RunningPod, phase?: V1PodStatus['phase'], reason?: string) {
    const ready = p.statuses.length > 0 && p.statuses.every((s) => s.ready);
    p.status = {
      ...p.status,
      ...(phase ? { phase } : {}),
      ...(reason ? { reason } : {}),
      conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }],
      containerStatuses: structuredClone(p.statuses),
    };
    p.onStatus(structuredClone(p.status));
  }

  async function start(pod: V1Pod, p: RunningPod) {
    for (const v of pod.spec!.volumes ?? []) {
      if (!v.emptyDir) throw new Error(`volume ${v.name}: only emptyDir is served by the fake`);
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), `fake-kube-${v.name}-`));
      // An emptyDir is writable by the pod's fsGroup; the fake's folders are made writable by any uid.
      fs.chmodSync(dir, 0o777);
      p.dirs.push(dir);
    }
    const volumeDirs = new Map((pod.spec!.volumes ?? []).map((v, i) => [v.name, p.dirs[i] as string]));
    for (const c of pod.spec!.containers) {
      p.containers.set(c.name, await docker.createContainer(createOptions(pod, c, volumeDirs, options)));
    }
    for (const c of pod.spec!.containers) {
      const container = p.containers.get(c.name)!;
      // 'next-exit': the default ('not-running') answers at once for a container not started yet.
      const waited = container.wait({ condition: 'next-exit' });
      await container.start();
      const i = p.statuses.findIndex((s) => s.name === c.name);
      p.statuses[i] = {
        ...p.statuses[i]!,
        ready: true,
        started: true,
        state: { running: { startedAt: new Date() } },
      };
      void waited.then(
        async (body: { StatusCode?: number }) => {
          const info = await container.inspect().catch(() => undefined);
          const exitCode = body.StatusCode ?? 1;
          p.statuses[i] = {
            ...p.statuses[i]!,
            ready: false,
            started: false,
            state: {
              terminated: {
                exitCode,
                reason: info?.State.OOMKilled ? 'OOMKilled' : exitCode === 0 ? 'Completed' : 'Error',
              },
            },
          };
          const allDone = p.statuses.every((s) => s.state?.terminated);
          const failed = p.statuses.some((s) => s.state?.terminated?.exitCode !== 0);
          publish(p, allDone ? (failed ? 'Failed' : 'Succeeded') : undefined);
        },
        () => undefined,
      );
    }
    publish(p, 'Running');
    const deadline = pod.spec!.activeDeadlineSeconds;
    if (deadline) {
      p.deadline = setTimeout(() => {
        for (const c of p.containers.values()) void c.kill({ signal: 'SIGKILL' }).catch(() => undefined);
        publish(p, 'Failed', 'DeadlineExceeded');
      }, deadline * 1000);
    }
  }

  async function removePod(key: string, graceSeconds: number) {
    const p = pods.get(key);
    if (!p) return;
    pods.delete(key);
    clearTimeout(p.deadline);
    await p.started.catch(() => undefined);
    await Promise.all(
      [...p.containers.values()].map(async (c) => {
        await c.stop({ t: graceSeconds }).catch(() => undefined);
        await c.remove({ force: true }).catch(() => undefined);
      }),
    );
    for (const dir of p.dirs) fs.rmSync(dir, { recursive: true, force: true });
  }

  function runningContainer(pod: V1Pod, name: string): Docker.Container {
    const p = pods.get(keyOf(pod));
    const container = p?.containers.get(name);
    const state = p?.statuses.find((s) => s.name === name)?.state;
    if (!container || !state?.running) throw new Error(`container ${name} is not running`);
    return container;
  }

  function streamsOf(
    socket: Duplex,
    withStdin: boolean,
    exitCode: () => Promise<number | undefined>,
  ): PodStreams {
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    docker.modem.demuxStream(socket, stdout, stderr);
    const closed = new Promise<void>((resolve) => {
      socket.once('end', resolve);
      socket.once('close', resolve);
      socket.once('error', () => resolve());
    });
    return { stdin: withStdin ? socket : undefined, stdout, stderr, ended: closed.then(exitCode) };
  }

  return {
    run(pod, onStatus) {
      const p: RunningPod = {
        containers: new Map(),
        statuses: pod.spec!.containers.map((c) => ({
          name: c.name,
          image: c.image ?? '',
          imageID: '',
          ready: false,
          restartCount: 0,
          state: { waiting: { reason: 'ContainerCreating' } },
        })),
        dirs: [],
        status: { phase: 'Pending' },
        onStatus,
        started: Promise.resolve(),
      };
      pods.set(keyOf(pod), p);
      p.started = start(pod, p).catch((err: unknown) => {
        p.status = { ...p.status, message: String(err) };
        publish(p, 'Failed', 'CreateContainerError');
      });
    },
    async attach(pod, name, want) {
      const container = runningContainer(pod, name);
      const socket = (await container.attach({
        stream: true,
        stdin: want.stdin,
        stdout: true,
        stderr: true,
        hijack: true,
      })) as Duplex;
      return streamsOf(socket, want.stdin, async () => undefined);
    },
    async exec(pod, name, command, want) {
      const container = runningContainer(pod, name);
      const exec = await container.exec({
        Cmd: command,
        AttachStdin: want.stdin,
        AttachStdout: true,
        AttachStderr: true,
      });
      const socket = (await exec.start({ hijack: true, stdin: want.stdin })) as Duplex;
      return streamsOf(socket, want.stdin, async () => {
        const info = await exec.inspect();
        return info.ExitCode ?? undefined;
      });
    },
    remove: (pod, graceSeconds) => removePod(keyOf(pod), graceSeconds),
    async close() {
      await Promise.all([...pods.keys()].map((k) => removePod(k, 0)));
    },
  };
}
