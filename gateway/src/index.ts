export { buildGateway, type GatewayOptions } from './server'
export { authenticate } from './principal'
