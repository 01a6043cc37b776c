"""Who may do what with annotation (on top of webapp/teams/permissions.py's roles).

- annotator (and above): score the items assigned to them, and only those
- admin/owner: create tasks, see everyone's progress, agreement and exports
- viewer: nothing here: no queue, 403 on every write; an outsider: 404
"""

from webapp.teams.models import Role
from webapp.teams.permissions import ANNOTATE

MANAGE_ANNOTATION = Role.ADMIN
WORK_ON_ANNOTATION = ANNOTATE
