/** Token lifetimes (spec, compatibility.md): code 1 minute, access token 1 hour, refresh token 1 year. */
export const CODE_LIFETIME_S = 60;
export const ACCESS_TOKEN_LIFETIME_S = 3600;
export const REFRESH_TOKEN_LIFETIME_S = 365 * 24 * 3600;
