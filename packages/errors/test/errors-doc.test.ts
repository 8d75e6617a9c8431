import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ERROR_STATUS, ContractError, isErrorCode } from '../src'

const doc = readFileSync(join(__dirname, '..', '..', '..', 'docs', 'errors.md'), 'utf8')
const documented = new Map(
  [...doc.matchAll(/^\| (\w+) \| (\d{3}) \|/gm)].map((m) => [m[1] as string, Number(m[2])]),
)

test('docs/errors.md lists every code with the status the code uses, and nothing else', () => {
  expect(Object.fromEntries(documented)).toEqual(ERROR_STATUS)
})

test('ContractError carries the status of its code and renders the XRPC body', () => {
  const err = new ContractError('AppEnvironmentNotConfigured', 'no live configuration')
  expect(err.status).toBe(404)
  expect(err.toBody()).toEqual({ error: 'AppEnvironmentNotConfigured', message: 'no live configuration' })
  expect(isErrorCode('JwtReplayed')).toBe(true)
  expect(isErrorCode('toString')).toBe(false)
})
