export * from './server'
export * from './models'
export { typeDefs } from './schema'
export { upsertActor, setPayoutStatus, getPayoutStatus, findActor, lookupActor, completeTestPayoutOnboarding, isPayable, type ActorView, type PayoutStatusView, type UpsertActorInput } from './domain/actors'
