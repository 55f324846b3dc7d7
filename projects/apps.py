from django.apps import AppConfig


class ProjectsConfig(AppConfig):
    name = "projects"

    def ready(self) -> None:
        from accounts import signals

        from . import services

        # Project teams are this app's: the accounts app below says when a person leaves a
        # workspace or accepts an invitation naming projects, and the teams follow here.
        signals.membership_removing.connect(
            services.workspace_member_leave_teams, dispatch_uid="projects.leave_teams"
        )
        signals.invitation_accepting.connect(
            services.invitation_teams_join, dispatch_uid="projects.join_teams"
        )
