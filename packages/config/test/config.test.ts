import { loadConfig } from '../src'

const token = (c: string) => c.repeat(40)

describe('gateway credentials', () => {
  it('gives the events workers a credential of their own', () => {
    const config = loadConfig({ EVENTS_GATEWAY_TOKEN: token('e'), ADAPTER_GATEWAY_TOKEN: token('a'), OPERATOR_TOKEN: token('o') })
    expect(config.secrets.eventsGatewayToken).toBe(token('e'))
    expect(loadConfig({}).secrets.eventsGatewayToken).not.toBe(loadConfig({}).secrets.adapterGatewayToken)
  })

  it('refuses at start two callers sharing one credential', () => {
    expect(() => loadConfig({ EVENTS_GATEWAY_TOKEN: token('a'), ADAPTER_GATEWAY_TOKEN: token('a') })).toThrow(/EVENTS_GATEWAY_TOKEN.*must differ from ADAPTER_GATEWAY_TOKEN/s)
    expect(() => loadConfig({ OPERATOR_TOKEN: token('e'), EVENTS_GATEWAY_TOKEN: token('e') })).toThrow(/OPERATOR_TOKEN.*must differ from EVENTS_GATEWAY_TOKEN/s)
  })

  it('refuses the development credential in production', () => {
    const production = {
      NODE_ENV: 'production',
      INTERNAL_CONTEXT_SECRET: token('i'),
      ADAPTER_GATEWAY_TOKEN: token('a'),
      OPERATOR_TOKEN: token('o'),
      PAYMENT_TOKEN_SECRET: token('p'),
      WEBHOOK_SECRET_KEY: token('w'),
      SERVICE_SIGNING_KEY: 'ab'.repeat(32),
    }
    expect(() => loadConfig(production)).toThrow(/EVENTS_GATEWAY_TOKEN.*must be set in production/s)
    expect(loadConfig({ ...production, EVENTS_GATEWAY_TOKEN: token('e') }).secrets.eventsGatewayToken).toBe(token('e'))
  })
})
