export * from './outbox'
export * from './queue'
export * from './writes'
export * from './relay'
