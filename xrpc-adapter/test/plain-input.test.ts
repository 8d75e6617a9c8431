/** The one walk of every XRPC params and body: no NUL character in any text, no nesting past MAX_INPUT_DEPTH. */
import { assertPlainInput, MAX_INPUT_DEPTH } from '../src/plugins/xrpc'

/** An object nested `depth` levels (the outermost is level 1). */
function nested(depth: number): unknown {
  let value: unknown = 'leaf'
  for (let i = 0; i < depth; i++) value = { a: value }
  return value
}

it(`accepts a body nested ${MAX_INPUT_DEPTH} levels and refuses one level more`, () => {
  expect(() => assertPlainInput(nested(MAX_INPUT_DEPTH), 'Input')).not.toThrow()
  expect(() => assertPlainInput(nested(MAX_INPUT_DEPTH + 1), 'Input')).toThrow(`Input nests deeper than ${MAX_INPUT_DEPTH} levels`)
  expect(() => assertPlainInput([[[]]], 'Input')).not.toThrow()
})

it('refuses a NUL character in a string or a key, naming where', () => {
  expect(() => assertPlainInput({ tiers: [{ name: 'ok' }, { name: 'a\u0000b' }] }, 'Input')).toThrow('Input/tiers/1/name must not contain the NUL character (U+0000)')
  expect(() => assertPlainInput({ tiers: [{ ['k\u0000']: 1 }] }, 'Input')).toThrow('Input/tiers/0 must not contain the NUL character (U+0000)')
  expect(() => assertPlainInput({ token: 'x\u0000' }, 'Params')).toThrow('Params/token must not contain the NUL character (U+0000)')
  expect(() => assertPlainInput({ a: ['fine', 1, null, true] }, 'Input')).not.toThrow()
})
