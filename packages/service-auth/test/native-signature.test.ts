import { P256Keypair, Secp256k1Keypair, verifySignature } from '@atproto/crypto'
import { verifySignatureNatively } from '../src/native-signature'

const ORDERS = {
  ES256: BigInt('0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551'),
  ES256K: BigInt('0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141'),
}

function highSTwin(sig: Uint8Array, n: bigint): Uint8Array {
  const s = BigInt(`0x${Buffer.from(sig.subarray(32)).toString('hex')}`)
  const twin = (n - s).toString(16).padStart(64, '0')
  return Uint8Array.from([...sig.subarray(0, 32), ...Buffer.from(twin, 'hex')])
}

function der(sig: Uint8Array): Uint8Array {
  const int = (b: Uint8Array) => {
    let bytes = [...b]
    while (bytes.length > 1 && bytes[0] === 0) bytes = bytes.slice(1)
    if ((bytes[0] as number) & 0x80) bytes = [0, ...bytes]
    return [0x02, bytes.length, ...bytes]
  }
  const body = [...int(sig.subarray(0, 32)), ...int(sig.subarray(32))]
  return Uint8Array.from([0x30, body.length, ...body])
}

describe.each([
  ['ES256', P256Keypair],
  ['ES256K', Secp256k1Keypair],
] as const)('%s', (alg, Keypair) => {
  test('agrees with @atproto/crypto on valid, tampered, malleable and DER signatures', async () => {
    const keypair = await Keypair.create()
    const did = keypair.did()
    for (let i = 0; i < 20; i++) {
      const msg = new TextEncoder().encode(`header.payload-${i}`)
      const sig = await keypair.sign(msg)
      expect(await verifySignatureNatively(did, msg, sig, alg)).toBe(true)
      expect(await verifySignature(did, msg, sig, { jwtAlg: alg })).toBe(true)

      const tampered = new TextEncoder().encode(`header.payload-${i}!`)
      expect(await verifySignatureNatively(did, tampered, sig, alg)).toBe(false)

      // The high-S twin is a valid ECDSA signature that atproto refuses as malleable.
      const twin = highSTwin(sig, ORDERS[alg])
      expect(await verifySignature(did, msg, twin, { jwtAlg: alg, allowMalleableSig: true })).toBe(true)
      expect(await verifySignature(did, msg, twin, { jwtAlg: alg })).toBe(false)
      expect(await verifySignatureNatively(did, msg, twin, alg)).toBe(false)

      expect(await verifySignatureNatively(did, msg, der(sig), alg)).toBe(false)
    }
  })

  test('refuses a header alg that does not match the key', async () => {
    const keypair = await Keypair.create()
    const msg = new TextEncoder().encode('m')
    const sig = await keypair.sign(msg)
    expect(await verifySignatureNatively(keypair.did(), msg, sig, alg === 'ES256' ? 'ES256K' : 'ES256')).toBe(false)
  })
})
