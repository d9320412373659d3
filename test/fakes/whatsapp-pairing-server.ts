/**
 * A WhatsApp server for the linking step only, where crabline stops: crabline treats every connection as an
 * already linked device and cannot decode the pairing-code request (`link_code_companion_reg`, whose `stage`
 * attribute is a dictionary token it lacks), so it closes the socket. This one does what WhatsApp does for a
 * device that is not linked yet: the Noise handshake (as Baileys' own client checks it), a `pair-device`
 * offer with QR refs (Baileys turns them into its own QR event), an answer to the pairing-code request with
 * a pairing ref, and, when the test says the phone confirmed, WhatsApp's request to reconnect (515). A
 * device that logs in with saved credentials gets `success`; every other query gets an empty result.
 *
 * The phone's half (the pairing cryptography that ends in `pair-success`) stays synthetic in the test: it
 * needs the account's own signing keys.
 */
import {
  Curve,
  aesDecryptGCM,
  aesEncryptGCM,
  decodeBinaryNode,
  encodeBinaryNode,
  getBinaryNodeChild,
  hkdf,
  NOISE_MODE,
  NOISE_WA_HEADER,
  proto,
  sha256,
  type BinaryNode,
} from '@whiskeysockets/baileys';
import { startWsServer, type WsConnection } from './websocket-server.ts';

/**
 * WhatsApp's Noise certificate chain (public data: an intermediate signed by WhatsApp's root key, which
 * Baileys checks, and a leaf signed by the intermediate), as WhatsApp's servers present it.
 */
const NOISE_CERT_CHAIN = Buffer.from(
  'CncKMwjjAhADGiCRKg7Kg1iu4CSulwLBaxX51Tefw6VXGgZqcr5OEbXIRiDQ04bOBijQjZ/TBhJA34Bj82jAHhLpCWBNVBlGnFDieamd8+138S57uMt9ke9mrn5r4+VepwBPKEgHjob6bR70rlCmWDkxZv+CfVjIAxJ2CjIIAxAAGiAcUamsMDmUxsjQuS6hh4pTNHZZnMWZ++o1mX2aqQzOYiCAka6+Bij/3rfcBhJAJw8pRkhTn+1IcOJQVN1OlZg6uikYnCumyO7acFVVX3U3QPXsGSq2TCbCbWrebSC593Su43EgprIDlfU8ZgWFBw==',
  'base64',
);
/** What a Baileys client writes before its first frame: "WA", the Noise protocol version, the dictionary version. */
const WA_INTRO = Buffer.from('WA');
const SERVER = 's.whatsapp.net';
const EMPTY = Buffer.alloc(0);

export interface PairingCodeRequest {
  /** The account the device asks to join: `<phone>@s.whatsapp.net`. */
  jid: string;
  stage: string;
  /** The companion's pairing material was present (the wrapped ephemeral key, its Noise key, its platform). */
  complete: boolean;
}

export interface FakePairingServer {
  url: string;
  /** Pairing-code requests received, in order. */
  pairingRequests(): PairingCodeRequest[];
  /** How many connections offered QR refs (devices not linked yet) and how many logged in. */
  counts(): { offered: number; loggedIn: number };
  /** The phone confirmed: WhatsApp asks every open connection to reconnect (stream error 515). */
  requestRestart(): Promise<void>;
  close(): Promise<void>;
}

const iv = (counter: number) => {
  const b = Buffer.alloc(12);
  b.writeUInt32BE(counter, 8);
  return b;
};
const lengthPrefixed = (data: Uint8Array) => {
  const out = Buffer.alloc(3 + data.byteLength);
  out.writeUIntBE(data.byteLength, 0, 3);
  out.set(data, 3);
  return out;
};
const unixSeconds = () => String(Math.floor(Date.now() / 1000));

/** The responder's half of Noise XX as WhatsApp runs it (Curve25519, AES-GCM, SHA-256). */
class NoiseResponder {
  private hash: Buffer;
  private salt: Buffer;
  private key: Buffer;
  private counter = 0;
  private ephemeral = Curve.generateKeyPair();
  private transport: { enc: Buffer; dec: Buffer; read: number; write: number } | undefined;

  constructor() {
    const mode = Buffer.from(NOISE_MODE);
    this.hash = mode.byteLength === 32 ? mode : sha256(mode);
    this.salt = this.hash;
    this.key = this.hash;
    // The prologue: the intro the client wrote before its hello.
    this.authenticate(NOISE_WA_HEADER);
  }

  get ready() {
    return this.transport !== undefined;
  }

  authenticate(data: Uint8Array) {
    this.hash = sha256(Buffer.concat([this.hash, data]));
  }

  private mix(data: Uint8Array) {
    const out = hkdf(Buffer.from(data), 64, { salt: this.salt, info: '' });
    this.salt = Buffer.from(out.subarray(0, 32));
    this.key = Buffer.from(out.subarray(32));
    this.counter = 0;
  }

  private encrypt(plain: Uint8Array) {
    const out = aesEncryptGCM(plain, this.key, iv(this.counter++), this.hash);
    this.authenticate(out);
    return out;
  }

  private decrypt(cipher: Uint8Array) {
    const out = aesDecryptGCM(cipher, this.key, iv(this.counter++), this.hash);
    this.authenticate(cipher);
    return out;
  }

  serverHello(clientEphemeral: Uint8Array): Uint8Array {
    this.authenticate(clientEphemeral);
    this.authenticate(this.ephemeral.public);
    this.mix(Curve.sharedKey(this.ephemeral.private, clientEphemeral));
    const statik = Curve.generateKeyPair();
    const encryptedStatic = this.encrypt(statik.public);
    this.mix(Curve.sharedKey(statik.private, clientEphemeral));
    const payload = this.encrypt(NOISE_CERT_CHAIN);
    return proto.HandshakeMessage.encode({
      serverHello: { ephemeral: this.ephemeral.public, static: encryptedStatic, payload },
    }).finish();
  }

  /** Reads the client's static key and login payload, and switches to transport keys. */
  clientFinish(finish: proto.HandshakeMessage.IClientFinish): proto.ClientPayload {
    if (!finish.static || !finish.payload)
      throw new Error('a client finish without its static key or payload');
    const clientStatic = this.decrypt(finish.static);
    this.mix(Curve.sharedKey(this.ephemeral.private, clientStatic));
    const payload = proto.ClientPayload.decode(this.decrypt(finish.payload));
    const keys = hkdf(EMPTY, 64, { salt: this.salt, info: '' });
    // The client writes with the first half and reads with the second.
    this.transport = {
      dec: Buffer.from(keys.subarray(0, 32)),
      enc: Buffer.from(keys.subarray(32)),
      read: 0,
      write: 0,
    };
    return payload;
  }

  seal(plain: Uint8Array): Uint8Array {
    const t = this.transport;
    if (!t) throw new Error('the Noise transport is not ready');
    return aesEncryptGCM(plain, t.enc, iv(t.write++), EMPTY);
  }

  open(cipher: Uint8Array): Buffer {
    const t = this.transport;
    if (!t) throw new Error('the Noise transport is not ready');
    return aesDecryptGCM(cipher, t.dec, iv(t.read++), EMPTY);
  }
}

/** Strips what a Baileys client writes before its first frame (an optional routing header, then "WA" + 2 bytes). */
function stripIntro(data: Buffer): Buffer {
  let rest = data;
  if (rest.subarray(0, 2).toString('latin1') === 'ED') rest = rest.subarray(7 + rest.readUIntBE(4, 3));
  if (!rest.subarray(0, 2).equals(WA_INTRO)) throw new Error('a client that did not start with the WA intro');
  return rest.subarray(4);
}

export async function startFakePairingServer(opts: { selfLid?: string } = {}): Promise<FakePairingServer> {
  const requests: PairingCodeRequest[] = [];
  const open = new Set<{ sendNode(node: BinaryNode): Promise<void> }>();
  const counts = { offered: 0, loggedIn: 0 };
  let refSeq = 0;
  let idSeq = 0;

  const ws = await startWsServer((conn: WsConnection) => {
    const noise = new NoiseResponder();
    let inBytes: Buffer = Buffer.alloc(0);
    let intro = true;
    let handshake: 'hello' | 'finish' | 'open' = 'hello';
    let chain = Promise.resolve();
    const session = {
      async sendNode(node: BinaryNode) {
        conn.send(lengthPrefixed(noise.seal(encodeBinaryNode(node))));
      },
    };
    const result = (node: BinaryNode, content?: BinaryNode[]): BinaryNode => ({
      tag: 'iq',
      attrs: { from: SERVER, id: node.attrs.id ?? '', type: 'result', t: unixSeconds() },
      ...(content ? { content } : {}),
    });

    const onNode = async (node: BinaryNode) => {
      if (node.tag !== 'iq' || node.attrs.type === 'result' || node.attrs.type === 'error') return;
      const linkCode = getBinaryNodeChild(node, 'link_code_companion_reg');
      if (linkCode) {
        const has = (tag: string) => getBinaryNodeChild(linkCode, tag) !== undefined;
        requests.push({
          jid: linkCode.attrs.jid ?? '',
          stage: linkCode.attrs.stage ?? '',
          complete:
            has('link_code_pairing_wrapped_companion_ephemeral_pub') &&
            has('companion_server_auth_key_pub') &&
            has('companion_platform_id'),
        });
        await session.sendNode(
          result(node, [
            {
              tag: 'link_code_companion_reg',
              attrs: {},
              content: [
                {
                  tag: 'link_code_pairing_ref',
                  attrs: {},
                  content: Buffer.from(`pairing-ref-${requests.length}`),
                },
              ],
            },
          ]),
        );
        return;
      }
      if (node.attrs.xmlns === 'encrypt' && getBinaryNodeChild(node, 'count')) {
        await session.sendNode(result(node, [{ tag: 'count', attrs: { value: '50' } }]));
        return;
      }
      await session.sendNode(result(node));
    };

    const onFrame = async (frame: Buffer) => {
      if (handshake === 'hello') {
        const hello = proto.HandshakeMessage.decode(frame).clientHello;
        if (!hello?.ephemeral) throw new Error('a client hello without its ephemeral key');
        conn.send(lengthPrefixed(noise.serverHello(hello.ephemeral)));
        handshake = 'finish';
        return;
      }
      if (handshake === 'finish') {
        const finish = proto.HandshakeMessage.decode(frame).clientFinish;
        if (!finish) throw new Error('expected the client finish');
        const payload = noise.clientFinish(finish);
        handshake = 'open';
        open.add(session);
        if (payload.devicePairingData) {
          // Not linked yet: offer QR refs, as WhatsApp does; Baileys draws one per ref.
          counts.offered += 1;
          const refs = [1, 2, 3].map((): BinaryNode => ({
            tag: 'ref',
            attrs: {},
            content: Buffer.from(`ref-${(refSeq += 1)}`),
          }));
          await session.sendNode({
            tag: 'iq',
            attrs: { from: SERVER, type: 'set', id: `pair-${(idSeq += 1)}` },
            content: [{ tag: 'pair-device', attrs: {}, content: refs }],
          });
        } else {
          counts.loggedIn += 1;
          await session.sendNode({
            tag: 'success',
            attrs: { t: unixSeconds(), ...(opts.selfLid ? { lid: opts.selfLid } : {}) },
          });
        }
        return;
      }
      await onNode(await decodeBinaryNode(noise.open(frame)));
    };

    return {
      onMessage(data) {
        // Frames are handled strictly in order: each may wait for an encryption step of the one before.
        chain = chain
          .then(async () => {
            inBytes = Buffer.concat([inBytes, intro ? stripIntro(data) : data]);
            intro = false;
            while (inBytes.length >= 3) {
              const size = inBytes.readUIntBE(0, 3);
              if (inBytes.length < size + 3) break;
              const frame = inBytes.subarray(3, size + 3);
              inBytes = inBytes.subarray(size + 3);
              await onFrame(frame);
            }
          })
          .catch(() => conn.close(1002));
      },
      onClose() {
        open.delete(session);
      },
    };
  });

  return {
    url: ws.url,
    pairingRequests: () => [...requests],
    counts: () => ({ ...counts }),
    async requestRestart() {
      for (const s of open) await s.sendNode({ tag: 'stream:error', attrs: { code: '515' }, content: [] });
    },
    close: () => ws.close(),
  };
}
