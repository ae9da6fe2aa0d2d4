export const USERINFO_PATH = '/userinfo';
export const END_SESSION_PATH = '/logout';
export const ACCOUNT_PATH = '/account';
