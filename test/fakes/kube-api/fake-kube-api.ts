import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import type { V1NetworkPolicy, V1Pod } from '@kubernetes/client-node';
import { Pod } from 'kubernetes-models/v1/Pod';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy';
import { WebSocketServer, type WebSocket } from 'ws';
import { restrictedViolations } from './pod-security.ts';
import type { DockerPods } from './docker-pods.ts';

/**
 * A Kubernetes API server for tests: real HTTP speaking exactly the calls the Kubernetes runner makes, for
 * the real `@kubernetes/client-node` to drive. Objects are validated against Kubernetes' published schemas
 * (`kubernetes-models`) and pods against the `restricted` Pod Security Standard before they are accepted,
 * as a namespace enforcing it would. Watches send bookmarks and answer a compacted resource version with a
 * 410 "Expired" event, as the real server does, so a client's resync path runs.
 *
 * With `pods`, a pod's containers run as real Docker containers (docker-pods.ts) and `attach` is served
 * over WebSocket with the `v5.channel.k8s.io` framing the real API server speaks: one leading byte names the
 * stream (0 stdin, 1 stdout, 2 stderr, 3 the final status), and a client ends stdin with [255, 0].
 * Without `pods`, pods stay Pending until a test sets their phase.
 */
export interface FakeKubeApi {
  url: string;
  /** A kubeconfig file naming this server, written into `dir`. */
  writeKubeconfig(dir: string): string;
  pods(): V1Pod[];
  /** Every pod the server accepted, as it was created (deleted ones too). */
  accepted(): V1Pod[];
  policies(): V1NetworkPolicy[];
  /** Refuse every request on a resource with 403, as RBAC without the grant does. */
  forbid(resource: 'pods' | 'networkpolicies'): void;
  /** Resolves once a watch is open (its backlog sent): what a test does next reaches it. */
  watchOpened(): Promise<void>;
  /** Sends a BOOKMARK to every open watch that asked for them. */
  bookmark(): void;
  /** Forgets events up to now: a watch from an older resource version gets 410 Expired. */
  compact(): void;
  /** Sets a pod's phase (and its containers' readiness) and tells the watchers. */
  setPhase(namespace: string, name: string, phase: 'Pending' | 'Running' | 'Succeeded' | 'Failed'): void;
  /** Every request's method and path, in order. */
  readonly requests: string[];
  close(): Promise<void>;
}

type Kind = 'pods' | 'networkpolicies';
interface WatchEvent {
  rv: number;
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  kind: Kind;
  object: V1Pod | V1NetworkPolicy;
}
interface Watcher {
  kind: Kind;
  namespace: string;
  selector: Record<string, string>;
  bookmarks: boolean;
  res: http.ServerResponse;
}

const status = (code: number, reason: string, message: string) => ({
  kind: 'Status',
  apiVersion: 'v1',
  metadata: {},
  status: 'Failure',
  message,
  reason,
  code,
});

function parseSelector(text: string | null): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (text ?? '').split(',').filter(Boolean)) {
    const [k, v] = part.split('=');
    if (k === undefined || v === undefined) throw new Error(`unsupported label selector: ${part}`);
    out[k] = v;
  }
  return out;
}

const matches = (labels: Record<string, string> | undefined, selector: Record<string, string>) =>
  Object.entries(selector).every(([k, v]) => labels?.[k] === v);

export interface FakeKubeApiOptions {
  /** Runs each accepted pod's containers (on Docker) and serves attach to them. */
  pods?: DockerPods;
}

/** The subprotocols this fake speaks, best first; client-node offers v5 first. */
const CHANNEL_PROTOCOLS = ['v5.channel.k8s.io', 'v4.channel.k8s.io'];
const STDIN = 0;
const STDOUT = 1;
const STDERR = 2;
const STATUS = 3;
const CLOSE = 255;

export async function startFakeKubeApi(options: FakeKubeApiOptions = {}): Promise<FakeKubeApi> {
  let rv = 1;
  let compactedThrough = 0;
  const store: Record<Kind, Map<string, V1Pod | V1NetworkPolicy>> = {
    pods: new Map(),
    networkpolicies: new Map(),
  };
  const events: WatchEvent[] = [];
  const watchers = new Set<Watcher>();
  const forbidden = new Set<Kind>();
  const requests: string[] = [];
  const acceptedPods: V1Pod[] = [];
  let onWatch: (() => void)[] = [];

  const send = (w: Watcher, type: string, object: unknown) =>
    w.res.write(`${JSON.stringify({ type, object })}\n`);

  function record(kind: Kind, type: WatchEvent['type'], object: V1Pod | V1NetworkPolicy) {
    rv += 1;
    object.metadata!.resourceVersion = String(rv);
    const event = { rv, type, kind, object: structuredClone(object) };
    events.push(event);
    for (const w of watchers) {
      if (
        w.kind === kind &&
        w.namespace === object.metadata!.namespace &&
        matches(object.metadata!.labels, w.selector)
      ) {
        send(w, type, event.object);
      }
    }
  }

  function validate(kind: Kind, body: unknown): string | undefined {
    try {
      if (kind === 'pods') new Pod(body as never).validate();
      else new NetworkPolicy(body as never).validate();
    } catch (err) {
      return (err as Error).message;
    }
    if (kind === 'pods') {
      const violations = restrictedViolations(body as V1Pod);
      if (violations.length) return `violates PodSecurity "restricted:latest": ${violations.join(', ')}`;
    }
    return undefined;
  }

  function reply(res: http.ServerResponse, code: number, body: unknown) {
    res.writeHead(code, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  }

  async function readBody(req: http.IncomingMessage): Promise<unknown> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  }

  async function handle(req: http.IncomingMessage, res: http.ServerResponse) {
    const url = new URL(req.url ?? '/', 'http://fake');
    requests.push(`${req.method} ${url.pathname}`);
    const m =
      /^\/api\/v1\/namespaces\/([^/]+)\/(pods)(?:\/([^/]+))?$/.exec(url.pathname) ??
      /^\/apis\/networking\.k8s\.io\/v1\/namespaces\/([^/]+)\/(networkpolicies)(?:\/([^/]+))?$/.exec(
        url.pathname,
      );
    if (!m) return reply(res, 404, status(404, 'NotFound', `the server could not find ${url.pathname}`));
    const [, namespace, kindText, name] = m as unknown as [string, string, Kind, string | undefined];
    const kind = kindText;
    if (forbidden.has(kind)) {
      return reply(
        res,
        403,
        status(403, 'Forbidden', `${kind} is forbidden: no grant in namespace "${namespace}"`),
      );
    }
    const key = (n: string) => `${namespace}/${n}`;
    const apiVersion = kind === 'pods' ? 'v1' : 'networking.k8s.io/v1';
    const listKind = kind === 'pods' ? 'PodList' : 'NetworkPolicyList';

    if (req.method === 'GET' && name === undefined) {
      const selector = parseSelector(url.searchParams.get('labelSelector'));
      if (url.searchParams.get('watch') === 'true' || url.searchParams.get('watch') === '1') {
        const from = Number(url.searchParams.get('resourceVersion') ?? rv);
        res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
        const w: Watcher = {
          kind,
          namespace,
          selector,
          bookmarks: url.searchParams.get('allowWatchBookmarks') === 'true',
          res,
        };
        if (from < compactedThrough) {
          send(w, 'ERROR', status(410, 'Expired', `too old resource version: ${from} (${compactedThrough})`));
          return res.end();
        }
        for (const e of events) {
          if (
            e.rv > from &&
            e.kind === kind &&
            e.object.metadata!.namespace === namespace &&
            matches(e.object.metadata!.labels, selector)
          ) {
            send(w, e.type, e.object);
          }
        }
        watchers.add(w);
        for (const resolve of onWatch) resolve();
        onWatch = [];
        req.on('close', () => watchers.delete(w));
        return;
      }
      const items = [...store[kind].values()].filter(
        (o) => o.metadata!.namespace === namespace && matches(o.metadata!.labels, selector),
      );
      return reply(res, 200, {
        apiVersion,
        kind: listKind,
        metadata: { resourceVersion: String(rv) },
        items,
      });
    }
    if (req.method === 'GET' && name !== undefined) {
      const obj = store[kind].get(key(name));
      return obj
        ? reply(res, 200, obj)
        : reply(res, 404, status(404, 'NotFound', `${kind} "${name}" not found`));
    }
    if (req.method === 'POST' && name === undefined) {
      const body = (await readBody(req)) as V1Pod & V1NetworkPolicy;
      const problem = validate(kind, body);
      if (problem) return reply(res, 422, status(422, 'Invalid', problem));
      const objName = body.metadata?.name;
      if (!objName) return reply(res, 422, status(422, 'Invalid', 'metadata.name: Required value'));
      if (store[kind].has(key(objName))) {
        return reply(res, 409, status(409, 'AlreadyExists', `${kind} "${objName}" already exists`));
      }
      const obj = structuredClone(body);
      obj.metadata = {
        ...obj.metadata,
        namespace,
        uid: `uid-${rv + 1}`,
        creationTimestamp: new Date(0).toISOString() as never,
      };
      if (kind === 'pods') {
        acceptedPods.push(structuredClone(obj as V1Pod));
        (obj as V1Pod).status = { phase: 'Pending' };
      }
      store[kind].set(key(objName), obj);
      record(kind, 'ADDED', obj);
      reply(res, 201, obj);
      if (kind === 'pods' && options.pods) {
        options.pods.run(obj as V1Pod, (podStatus) => {
          if (store.pods.get(key(objName)) !== obj) return;
          (obj as V1Pod).status = podStatus;
          record('pods', 'MODIFIED', obj);
        });
      }
      return;
    }
    if (req.method === 'PUT' && name !== undefined) {
      const body = (await readBody(req)) as V1Pod & V1NetworkPolicy;
      const problem = validate(kind, body);
      if (problem) return reply(res, 422, status(422, 'Invalid', problem));
      const existing = store[kind].get(key(name));
      if (!existing) return reply(res, 404, status(404, 'NotFound', `${kind} "${name}" not found`));
      if (kind === 'pods')
        return reply(
          res,
          422,
          status(422, 'Invalid', 'pod updates may not change fields other than the image'),
        );
      const obj = { ...structuredClone(body), metadata: { ...body.metadata, ...existing.metadata } };
      store[kind].set(key(name), obj);
      record(kind, 'MODIFIED', obj);
      return reply(res, 200, obj);
    }
    if (req.method === 'DELETE' && name !== undefined) {
      const obj = store[kind].get(key(name));
      if (!obj) return reply(res, 404, status(404, 'NotFound', `${kind} "${name}" not found`));
      if (kind === 'pods' && options.pods) {
        const grace = Number(url.searchParams.get('gracePeriodSeconds') ?? 30);
        await options.pods.remove(obj as V1Pod, Number.isFinite(grace) ? grace : 30);
      }
      if (store[kind].get(key(name)) !== obj) {
        return reply(res, 404, status(404, 'NotFound', `${kind} "${name}" not found`));
      }
      store[kind].delete(key(name));
      record(kind, 'DELETED', obj);
      return reply(res, 200, obj);
    }
    return reply(res, 405, status(405, 'MethodNotAllowed', `${req.method} is not served on ${url.pathname}`));
  }

  const server = http.createServer((req, res) => {
    handle(req, res).catch((err: unknown) => reply(res, 500, status(500, 'InternalError', String(err))));
  });
  const sockets = new WebSocketServer({
    noServer: true,
    handleProtocols: (offered) => CHANNEL_PROTOCOLS.find((p) => offered.has(p)) ?? false,
  });
  const attached = new Set<WebSocket>();
  server.on('upgrade', (req, socket, head) => {
    const url = new URL(req.url ?? '/', 'http://fake');
    requests.push(`${req.method} ${url.pathname}`);
    const refuse = (code: number, text: string) => {
      socket.end(`HTTP/1.1 ${code} ${text}\r\ncontent-length: 0\r\n\r\n`);
    };
    const m = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/(attach|exec)$/.exec(url.pathname);
    if (!m || !options.pods) return refuse(404, 'Not Found');
    if (forbidden.has('pods')) return refuse(403, 'Forbidden');
    const pod = store.pods.get(`${m[1]}/${m[2]}`) as V1Pod | undefined;
    const container = url.searchParams.get('container') ?? pod?.spec?.containers[0]?.name ?? '';
    if (!pod) return refuse(404, 'Not Found');
    const want = { stdin: url.searchParams.get('stdin') === 'true' };
    const opened =
      m[3] === 'attach'
        ? options.pods.attach(pod, container, want)
        : options.pods.exec(pod, container, url.searchParams.getAll('command'), want);
    opened
      .then((streams) => {
        sockets.handleUpgrade(req, socket, head, (ws) => {
          attached.add(ws);
          const forward = (channel: number) => (chunk: Buffer) =>
            ws.send(Buffer.concat([Buffer.from([channel]), chunk]));
          streams.stdout.on('data', forward(STDOUT));
          streams.stderr.on('data', forward(STDERR));
          ws.on('message', (data: Buffer) => {
            if (data[0] === STDIN) streams.stdin?.write(data.subarray(1));
            else if (data[0] === CLOSE && data[1] === STDIN) streams.stdin?.end();
          });
          ws.on('close', () => {
            attached.delete(ws);
            streams.stdin?.destroy();
          });
          void streams.ended.then(() => {
            if (ws.readyState !== ws.OPEN) return;
            ws.send(
              Buffer.concat([Buffer.from([STATUS]), Buffer.from(JSON.stringify({ status: 'Success' }))]),
            );
            ws.close(1000);
          });
        });
      })
      .catch(() => refuse(400, 'Bad Request'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url,
    requests,
    writeKubeconfig(dir) {
      const file = path.join(dir, 'kubeconfig.json');
      fs.writeFileSync(
        file,
        JSON.stringify({
          apiVersion: 'v1',
          kind: 'Config',
          // client-node speaks plain HTTP only to a cluster marked so; the fake has no certificate to offer.
          clusters: [{ name: 'fake', cluster: { server: url, 'insecure-skip-tls-verify': true } }],
          users: [{ name: 'fake', user: { token: 'fake-token-for-tests' } }],
          contexts: [{ name: 'fake', context: { cluster: 'fake', user: 'fake' } }],
          'current-context': 'fake',
        }),
      );
      return file;
    },
    pods: () => [...store.pods.values()] as V1Pod[],
    accepted: () => [...acceptedPods],
    policies: () => [...store.networkpolicies.values()] as V1NetworkPolicy[],
    forbid: (resource) => forbidden.add(resource),
    watchOpened: () => new Promise<void>((resolve) => onWatch.push(resolve)),
    bookmark() {
      for (const w of watchers) {
        if (w.bookmarks) {
          send(w, 'BOOKMARK', {
            kind: w.kind === 'pods' ? 'Pod' : 'NetworkPolicy',
            apiVersion: w.kind === 'pods' ? 'v1' : 'networking.k8s.io/v1',
            metadata: { resourceVersion: String(rv) },
          });
        }
      }
    },
    compact() {
      compactedThrough = rv;
      events.length = 0;
    },
    setPhase(namespace, name, phase) {
      const pod = store.pods.get(`${namespace}/${name}`) as V1Pod | undefined;
      if (!pod) throw new Error(`no pod ${namespace}/${name}`);
      const ready = phase === 'Running';
      pod.status = {
        phase,
        conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }],
        containerStatuses: (pod.spec?.containers ?? []).map((c) => ({
          name: c.name,
          image: c.image ?? '',
          imageID: '',
          ready,
          restartCount: 0,
        })),
      };
      record('pods', 'MODIFIED', pod);
    },
    async close() {
      for (const ws of attached) ws.terminate();
      await options.pods?.close();
      for (const w of watchers) w.res.end();
      watchers.clear();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
