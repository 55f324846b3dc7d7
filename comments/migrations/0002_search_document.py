from django.db import migrations

from collab.db.fulltext import AddSearchDocument


class Migration(migrations.Migration):
    dependencies = [("comments", "0001_initial")]

    operations = [AddSearchDocument("comment", {"body": "B"})]
