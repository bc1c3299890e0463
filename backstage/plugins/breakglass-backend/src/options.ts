import {
  AuthService,
  DiscoveryService,
  HttpAuthService,
  LoggerService,
  PermissionsService,
  RootConfigService,
  UserInfoService,
} from '@backstage/backend-plugin-api';
import { CatalogService } from '@backstage/plugin-catalog-node';
import { NotificationService } from '@backstage/plugin-notifications-node';

/** What the routes are built from: Backstage's services. */
export interface RouterOptions {
  config: RootConfigService;
  logger: LoggerService;
  httpAuth: HttpAuthService;
  auth: AuthService;
  userInfo: UserInfoService;
  discovery: DiscoveryService;
  permissions: PermissionsService;
  catalog: CatalogService;
  notifications: NotificationService;
}
