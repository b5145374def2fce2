// Placeholder until this family's router lands: answers nothing, passes through.
import type Koa from 'koa';
import type { AppContext } from '../../lib/context.js';

export function legacyRoutes(_ctx: AppContext): Koa.Middleware {
  return (_koa, next) => next();
}
